// Pulumi.yaml's `main`: loads the program, compiled (dist/, built by `npm ci`) or, while a source is
// newer than the build, from its TypeScript source through tsx (bin/_load.js). Plain JS: it runs
// before any loader. The program's exports become the stack outputs through this default export.
import { load } from '../../bin/_load.js';

// The language host started this program; when it is gone (the engine was killed), exit with it.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.exit(1);
}, 1000).unref();

const program = await load('provider/program');
export default { ...program };
