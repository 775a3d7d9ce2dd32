/**
 * Poll delivery (RFC 8936): the receiver POSTs `{maxEvents, returnImmediately, ack, setErrs}` to its
 * stream's poll endpoint; the transmitter first settles what it acknowledges (acknowledged, or
 * refused with the receiver's error), then answers `{sets: {jti: SET}, moreAvailable}`: pending
 * SETs, oldest first, at most `maxEvents` (capped). A SET is answered again in later polls until
 * acknowledged (at least once). With none pending and `returnImmediately` false (the default), the
 * request waits for the next SETs, at most the long-poll bound, then answers none.
 */
import { SSF_MAX_EVENTS, type SsfPollBody } from '../../contract/index.ts';
import type { ServerContext } from '../_context.ts';
import { ServerError } from '../errors.ts';
import type { SsfStreamRecord } from '../storage/types.ts';
import type { SsfDispatcher } from './dispatcher.ts';
import type { SetSigner } from './sign.ts';

export async function poll(
  ctx: ServerContext, dispatcher: SsfDispatcher, signer: SetSigner, stream: SsfStreamRecord, body: SsfPollBody,
  longPollMs: number, closed: () => boolean,
): Promise<{ sets: Record<string, string>; moreAvailable: boolean }> {
  if (stream.body.method !== 'poll') throw new ServerError(400, 'invalid_request', `stream '${stream.id}' delivers by push: it has no poll endpoint`, true);
  const errs = body.setErrs ?? {};
  const settle = [...(body.ack ?? []), ...Object.keys(errs)];
  await ctx.storage.ssf.acknowledge(stream.tenant, stream.id, settle, Date.now(), (jti) => {
    const e = errs[jti];
    return e === undefined ? undefined : `${e.err}${e.description === undefined ? '' : `: ${e.description}`}`;
  });
  const max = Math.min(body.maxEvents ?? SSF_MAX_EVENTS, SSF_MAX_EVENTS);
  const deadline = Date.now() + (body.returnImmediately === true ? 0 : longPollMs);
  for (;;) {
    // A paused stream holds its SETs (SSF 1.0 §8.1.2): none go until it is enabled again.
    const current = await ctx.storage.ssf.get(stream.tenant, stream.id);
    if (current === undefined) throw new ServerError(404, 'not_found', `stream '${stream.id}' was deleted`, true);
    const found = current.status === 'enabled' ? await ctx.storage.ssf.pending(stream.tenant, stream.id, Math.max(max, 0)) : { sets: [], more: false };
    if (found.sets.length > 0 || max === 0 || Date.now() >= deadline || closed()) {
      const sets: Record<string, string> = {};
      for (const s of found.sets) sets[s.jti] = await signer.sign(s.tenant, s.claims);
      return { sets, moreAvailable: found.more || (max === 0 && found.sets.length > 0) };
    }
    // The next turn of the dispatcher (at most its poll interval away), or the deadline.
    await Promise.race([dispatcher.afterTurn(), new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now())).unref())]);
  }
}
