/**
 * What the benches read from /proc (Linux) about the processes they measure: a process tree (a
 * server's cluster primary and its workers), its CPU seconds and the largest RSS in it. On a
 * machine shared with other work the wall clock says little alone; CPU time says what the work
 * itself cost.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** `pid` and every process below it. */
export function processTree(pid: number): number[] {
  const out = [pid];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      for (const c of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean)) out.push(...processTree(Number(c)));
    }
  } catch {
    /* gone */
  }
  return out;
}

/** Fields from the third on of /proc/<pid>/stat (after the command name), as numbers. */
function stat(pid: number | 'self'): number[] {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return text.slice(text.lastIndexOf(')') + 2).split(' ').map(Number);
}

/** CPU seconds (user + system, all threads) of a running process and every process below it. */
export function treeCpuSeconds(pid: number): number {
  let ticks = 0;
  for (const p of processTree(pid)) {
    try {
      // utime and stime: fields 14 and 15 of stat, in clock ticks (100 per second on Linux).
      const f = stat(p);
      ticks += f[11]! + f[12]!;
    } catch {
      /* gone */
    }
  }
  return ticks / 100;
}

/** CPU seconds of this process's children that have ended and been waited for (cutime + cstime). */
export function endedChildrenCpuSeconds(): number {
  const f = stat('self');
  return (f[13]! + f[14]!) / 100;
}

/** The largest RSS in the tree, in bytes: the limit that matters is per process. */
export function treeMaxRss(pid: number): number {
  let max = 0;
  for (const p of processTree(pid)) {
    try {
      max = Math.max(max, Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, 'utf8'))![1]) * 1024);
    } catch {
      /* gone */
    }
  }
  return max;
}
