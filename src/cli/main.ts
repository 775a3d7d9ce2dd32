import { EXIT, UsageError, processIo, type CliIo, type Command } from '../command/io.ts';

export interface CommandEntry {
  readonly summary: string;
  readonly load: () => Promise<{ run: Command }>;
}

/**
 * Each command lives in its own file and is loaded only when called, to keep start-up fast.
 * `serve` is the server's own command (src/server/serve-command.ts): the entry point (bin/idforge.js)
 * adds it, so the CLI never imports the server; it talks to servers through the admin client.
 */
const COMMANDS: Readonly<Record<string, CommandEntry>> = {
  validate: { summary: 'check a model and report every problem with its location', load: () => import('./commands/validate.ts') },
  compile: { summary: 'write the provisioning plan and every client configuration', load: () => import('./commands/compile.ts') },
  schema: { summary: 'print the JSON Schema of the model', load: () => import('./commands/schema.ts') },
  plan: { summary: 'show what apply would create, change and delete on a live server', load: () => import('./commands/plan.ts') },
  apply: { summary: 'make a live server match the model', load: () => import('./commands/apply.ts') },
  scaffold: { summary: 'render a runnable sample client app for one application', load: () => import('./commands/scaffold.ts') },
  export: { summary: 'write a live tenant as a model file (to move a console-made tenant into Git)', load: () => import('./commands/export.ts') },
  events: { summary: "print a tenant's event log: changes with their commit, sign-ins (--follow to keep reading)", load: () => import('./commands/events.ts') },
};

/** How the entry point describes `serve`, which it loads from the server. */
export const SERVE_SUMMARY = 'run the authorization server';

export function usage(extra: Readonly<Record<string, CommandEntry>> = {}): string {
  const all = { ...COMMANDS, ...extra };
  const width = Math.max(...Object.keys(all).map((c) => c.length));
  const lines = Object.entries(all).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return `usage: idforge <command> [options]\n\ncommands:\n${lines.join('\n')}\n\nRun 'idforge <command> --help' for a command's options.\n`;
}

export async function main(
  argv: readonly string[],
  io: CliIo = processIo(),
  extra: Readonly<Record<string, CommandEntry>> = {},
): Promise<number> {
  const [name, ...rest] = argv;
  const commands = { ...COMMANDS, ...extra };
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    (name === undefined ? io.stderr : io.stdout)(usage(extra));
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  if (name === '--version') {
    io.stdout('idforge 0.1.0\n');
    return EXIT.ok;
  }
  const entry = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (entry === undefined) {
    io.stderr(`idforge: unknown command '${name}'\n\n${usage(extra)}`);
    return EXIT.usage;
  }
  try {
    const { run } = await entry.load();
    return await run(rest, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`idforge ${name}: ${err.message}\n`);
      return EXIT.usage;
    }
    // A bug, not the user's fault: say so plainly, keep the detail behind an opt-in.
    const detail = io.env.IDFORGE_DEBUG ? `\n${(err as Error).stack ?? String(err)}` : '';
    io.stderr(`idforge ${name}: internal error: ${(err as Error).message ?? String(err)}${detail}\n`);
    return EXIT.invalid;
  }
}
