/**
 * The login pages' only scripts, served from the tenant host (CSP `script-src 'self'`):
 * @simplewebauthn/browser's UMD bundle from node_modules, and passkey.js, which wires the
 * passkey buttons to it. Everything else on the login pages works without JavaScript.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Request, Response, Router } from 'express';

/**
 * Resolved through the package (esm/index.js) to its sibling bundle, wherever npm put it; read on
 * first request. Missing (an install without @simplewebauthn/browser) → undefined: the passkey
 * button then stays hidden and says passkeys are unavailable, and every other factor works.
 */
let bundle: string | null | undefined;
function browserBundle(log: (line: string) => void): string | undefined {
  if (bundle === undefined) {
    try {
      const entry = fileURLToPath(import.meta.resolve('@simplewebauthn/browser'));
      bundle = readFileSync(entry.replace(/esm[/\\]index\.js$/, 'dist/bundle/index.umd.min.js'), 'utf8');
    } catch (err) {
      bundle = null;
      log(`passkeys unavailable: cannot load @simplewebauthn/browser's bundle (${(err as Error).message})`);
    }
  }
  return bundle ?? undefined;
}

const PASSKEY_JS = `'use strict';
// Passkey buttons: read the options from the page's JSON block, ask the browser's authenticator,
// put the result in the form and submit it. Errors are said in words in the live region.
(function () {
  var lib = window.SimpleWebAuthnBrowser;
  var buttons = document.querySelectorAll('button[data-passkey]');
  for (var i = 0; i < buttons.length; i++) wire(buttons[i]);
  function wire(button) {
    var status = document.getElementById('passkey-status');
    function say(text) { if (status) status.textContent = text; }
    if (!lib || !lib.browserSupportsWebAuthn()) {
      say('This browser cannot use passkeys. Choose another way to sign in.');
      return;
    }
    button.hidden = false;
    button.addEventListener('click', function () {
      var form = button.closest('form');
      var optionsJSON = JSON.parse(document.getElementById(button.dataset.options).textContent);
      say(button.dataset.passkey === 'register' ? 'Follow your device to create the passkey…' : 'Follow your device to use your passkey…');
      var run = button.dataset.passkey === 'register'
        ? lib.startRegistration({ optionsJSON: optionsJSON })
        : lib.startAuthentication({ optionsJSON: optionsJSON });
      run.then(function (result) {
        form.elements.credential.value = JSON.stringify(result);
        form.submit();
      }, function (err) {
        say(err && err.name === 'NotAllowedError'
          ? 'The passkey request was cancelled or timed out. Try again, or choose another way.'
          : 'The passkey could not be used on this device. Try again, or choose another way.');
      });
    });
  }
})();
`;

export function mountLoginStatic(router: Router, log: (line: string) => void): void {
  const files: Record<string, () => string | undefined> = {
    '/static/login/simplewebauthn-browser.js': () => browserBundle(log),
    '/static/login/passkey.js': () => PASSKEY_JS,
  };
  for (const [path, body] of Object.entries(files)) {
    router.get(path, (_req: Request, res: Response) => {
      const text = body();
      if (text === undefined) return res.status(404).type('text/plain').send('not available\n');
      res.set({ 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=3600', 'x-content-type-options': 'nosniff' }).send(text);
    });
  }
}
