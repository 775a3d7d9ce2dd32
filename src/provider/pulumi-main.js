// Pulumi.yaml's `main`: registers tsx so the program and the providers run from their TypeScript
// sources (no build step to forget), then loads the program. Plain JS: it runs before any loader.
// The program's exports become the stack outputs through this module's default export.
import { register } from 'tsx/esm/api';

register();
const program = await import('./program.ts');
export default { ...program };
