/**
 * Secrets at rest: the master key, sealing of private signing keys, client secret and password
 * hashing. Everything that turns a secret into stored bytes goes through this file.
 */
import { createCipheriv, createDecipheriv, createHmac, createSecretKey, hkdfSync, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';
import { existsSync, linkSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import argon2 from 'argon2';
import { StartupError } from './errors.ts';

/** Env var holding the master key (32 bytes, base64url). Wins over the data dir's key file when set. */
export const MASTER_KEY_ENV = 'IDFORGE_MASTER_KEY';
/** Env var naming a file that holds the master key (what `--master-key-file` sets); wins over both above. */
export const MASTER_KEY_FILE_ENV = 'IDFORGE_MASTER_KEY_FILE';
/** Key file in the data dir, created (mode 0600) on first start when no key is given otherwise. */
export const MASTER_KEY_FILE = 'master.key';

/**
 * Makes `file` hold `content` only if it does not exist yet, atomically: written to a file of its
 * own, then hard-linked into place (link fails when the name exists). So replicas or workers
 * starting together on a new key file all end up with the one key that won, never half a file.
 * Returns the content the file holds afterwards.
 */
function createOnce(file: string, content: string): string {
  const tmp = join(dirname(file), `.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  writeFileSync(tmp, content, { mode: 0o600, flag: 'wx' });
  try {
    linkSync(tmp, file);
    return content;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return readFileSync(file, 'utf8');
  } finally {
    unlinkSync(tmp);
  }
}

export class MasterKey {
  readonly #key: Buffer;
  /** Derived keys are pure functions of (master, purpose): compute each once (HKDF per request showed in profiles). */
  readonly #derived = new Map<string, Buffer>();
  /**
   * The client-secret HMAC key as a KeyObject: createHmac with a Buffer key prepares a new key
   * object on every call, which was a tenth of a client_credentials grant's CPU in profiles.
   */
  #clientSecretKey: KeyObject | undefined;
  private constructor(
    key: Buffer,
    /** Where the key came from (the env var's name or the file's path), for messages. */
    readonly source: string,
  ) {
    this.#key = key;
  }

  /**
   * From `keyFile` (or the file IDFORGE_MASTER_KEY_FILE names), else IDFORGE_MASTER_KEY, else
   * `<dataDir>/master.key`; a key file that does not exist is made with a new random key only with
   * `mayCreate` (a database that holds nothing yet). Undefined when there is no key and none may be
   * made. A malformed key fails loudly: silently making a new one would orphan every sealed key.
   */
  static load(dataDir: string, env: Readonly<Record<string, string | undefined>> = process.env, mayCreate = true, keyFile?: string): MasterKey | undefined {
    const named = keyFile ?? (env[MASTER_KEY_FILE_ENV] === '' ? undefined : env[MASTER_KEY_FILE_ENV]);
    const fromEnv = env[MASTER_KEY_ENV];
    if (named === undefined && fromEnv !== undefined && fromEnv !== '') return new MasterKey(decodeKey(fromEnv, MASTER_KEY_ENV), MASTER_KEY_ENV);
    const file = named ?? join(dataDir, MASTER_KEY_FILE);
    if (existsSync(file)) return new MasterKey(decodeKey(readKeyFile(file), file), file);
    if (!mayCreate) return undefined;
    const text = createOnce(file, `${randomBytes(32).toString('base64url')}\n`);
    return new MasterKey(decodeKey(text.trim(), file), file);
  }

  /**
   * A key check value: stored with the data on first start, so a later start can tell the right
   * key from a wrong or newly made one before it overwrites anything. Under its own subkey, so it
   * reveals nothing usable about the others.
   */
  checkValue(): string {
    return `hmac-sha256:${createHmac('sha256', this.derive('key-check')).update('idforge master key check v1').digest('base64url')}`;
  }

  /** A purpose-bound subkey, so one leaked derived key (e.g. cookie signing) reveals nothing else. */
  derive(purpose: string, length = 32): Buffer {
    const id = `${purpose}/${length}`;
    let key = this.#derived.get(id);
    if (key === undefined) {
      key = Buffer.from(hkdfSync('sha256', this.#key, Buffer.alloc(0), `idforge:${purpose}`, length));
      this.#derived.set(id, key);
    }
    return key;
  }

  /** AES-256-GCM; the associated data binds a sealed value to its owner (e.g. tenant + kid). */
  seal(plaintext: string, associated: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.derive('seal'), iv);
    cipher.setAAD(Buffer.from(associated));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `v1.${iv.toString('base64url')}.${body.toString('base64url')}.${cipher.getAuthTag().toString('base64url')}`;
  }

  unseal(sealed: string, associated: string): string {
    const [v, iv, body, tag] = sealed.split('.');
    if (v !== 'v1' || iv === undefined || body === undefined || tag === undefined) throw new Error('unknown sealed format');
    const decipher = createDecipheriv('aes-256-gcm', this.derive('seal'), Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(associated));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  }

  /**
   * Client secrets are stored as HMAC-SHA-256 under a key derived from the master key. A slow hash
   * (argon2) would add nothing: secrets are at least 32 chars (server-made ones carry 256 bits of
   * entropy), so brute force is hopeless anyway, while the token endpoint must stay fast.
   */
  hashClientSecret(secret: string): string {
    this.#clientSecretKey ??= createSecretKey(this.derive('client-secret'));
    return `hmac-sha256:${createHmac('sha256', this.#clientSecretKey).update(secret, 'utf8').digest('base64url')}`;
  }

  verifyClientSecret(stored: string, candidate: string): boolean {
    const a = Buffer.from(stored);
    const b = Buffer.from(this.hashClientSecret(candidate));
    return a.length === b.length && timingSafeEqual(a, b);
  }
}

/** A master key's text: 32 bytes, base64url (43 characters; padding allowed). */
const KEY_TEXT = /^[A-Za-z0-9_-]{43}=?$/;

/** A key file's text, or one clear line on why it cannot be read (a directory, no permission). */
function readKeyFile(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new StartupError(`refusing to start: the master key file ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
}

function decodeKey(text: string, source: string): Buffer {
  // Buffer.from skips characters outside the alphabet, so the text is checked first: a file of
  // anything else is refused, never read as some other key.
  if (!KEY_TEXT.test(text)) {
    throw new StartupError(`refusing to start: the master key from ${source} is malformed: it must be 32 random bytes, base64url encoded (43 characters of A-Z, a-z, 0-9, - and _), e.g. made by: node -e "console.log(require('crypto').randomBytes(32).toString('base64url'))"`);
  }
  return Buffer.from(text, 'base64url');
}

/** A new client secret: 32 random bytes, base64url (43 chars), above the API's 32-char minimum. */
export function newClientSecret(): string {
  return randomBytes(32).toString('base64url');
}

export function randomId(bytes = 16): string {
  return randomBytes(bytes).toString('base64url');
}

/**
 * Password hashing: argon2id, memory 19 MiB (19456 KiB), 2 iterations, parallelism 1, 32-byte
 * hash, 16-byte salt: the first configuration of OWASP's Password Storage Cheat Sheet. It costs
 * more memory × passes (38 MiB) than Keycloak's default (argon2id, 7 MiB, 5 iterations,
 * parallelism 1: 35 MiB), about 22 ms of a core here. Every hash carries its parameters, so hashes
 * made with other ones (earlier releases used 5 iterations) still verify.
 */
export const PASSWORD_HASH_PARAMS = {
  type: argon2.argon2id,
  memoryCost: 19_456,
  timeCost: 2,
  parallelism: 1,
  hashLength: 32,
} as const;

export function hashPassword(password: string): Promise<string> {
  return argon2.hash(password, PASSWORD_HASH_PARAMS);
}

/** A hash of a random password: verified against when the user is unknown, to equalise timing. */
let decoy: Promise<string> | undefined;

export async function verifyPassword(hash: string | undefined, password: string): Promise<boolean> {
  if (hash === undefined) {
    decoy ??= hashPassword(randomBytes(16).toString('base64url'));
    await argon2.verify(await decoy, password).catch(() => false);
    return false;
  }
  try {
    return await argon2.verify(hash, password);
  } catch {
    return false;
  }
}
