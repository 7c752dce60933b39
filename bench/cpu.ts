import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticksPerSecond: number | undefined;

/**
 * CPU time (user + system, milliseconds) the processes have used so far, from /proc/<pid>/stat; a
 * process that is gone counts as 0. Linux only; elsewhere every process counts as 0.
 */
export function cpuMs(pids: readonly (number | undefined)[]): number {
  ticksPerSecond ??= Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
  let ticks = 0;
  for (const pid of pids) {
    if (pid === undefined) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // gone
    }
  }
  return (ticks / ticksPerSecond) * 1000;
}
