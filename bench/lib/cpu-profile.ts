/**
 * CPU profiles of a browser's pages and dedicated workers, over the Chrome DevTools
 * Protocol, for finding where a benchmark's time goes (`SOV_BENCH_PROFILE=DIR`).
 * Workers have no Playwright CDP session of their own: they are reached through the
 * browser session with `Target.attachToTarget` (not flattened) and messages relayed by
 * `Target.sendMessageToTarget`. Each profile is written as DIR/<type>-<n>.cpuprofile
 * (open in Chromium's DevTools, Performance panel), with a summary of the heaviest
 * functions by self time printed to stderr.
 */
import type { Browser, CDPSession } from '@playwright/test';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

type ProfileNode = {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
};
type Profile = { nodes: ProfileNode[]; samples?: number[]; timeDeltas?: number[]; startTime: number; endTime: number };

type Session = { readonly id: string; readonly label: string };

export class CpuProfiles {
  readonly #cdp: CDPSession;
  readonly #sessions: Session[] = [];
  readonly #pending = new Map<number, (result: unknown) => void>();
  #next = 1;

  private constructor(cdp: CDPSession) {
    this.#cdp = cdp;
    cdp.on('Target.receivedMessageFromTarget', (event) => {
      const message = JSON.parse(event.message) as { id?: number; result?: unknown; error?: unknown };
      if (message.id === undefined) return;
      this.#pending.get(message.id)?.(message.result ?? message.error);
      this.#pending.delete(message.id);
    });
  }

  /** Attaches to every page and dedicated worker whose URL starts with `origin`, and starts profiling. */
  static async start(browser: Browser, origin: string): Promise<CpuProfiles> {
    const profiles = new CpuProfiles(await browser.newBrowserCDPSession());
    const { targetInfos } = await profiles.#cdp.send('Target.getTargets');
    const counts = new Map<string, number>();
    for (const target of targetInfos) {
      if (!target.url.startsWith(origin) || !['page', 'worker'].includes(target.type)) continue;
      const { sessionId } = await profiles.#cdp.send('Target.attachToTarget', {
        targetId: target.targetId,
        flatten: false,
      });
      const n = (counts.get(target.type) ?? 0) + 1;
      counts.set(target.type, n);
      const name = target.url.split('/').pop()?.split('?')[0] ?? '';
      const context = (target.browserContextId ?? '').slice(0, 6);
      const session = { id: sessionId, label: `${context}-${target.type}-${n}-${name.replace(/[^\w.-]/g, '_')}` };
      profiles.#sessions.push(session);
      await profiles.#call(session, 'Profiler.enable');
      await profiles.#call(session, 'Profiler.setSamplingInterval', { interval: 500 });
      await profiles.#call(session, 'Profiler.start');
    }
    return profiles;
  }

  /** Stops every profile, writes them to `dir` and prints each one's heaviest functions. */
  async stop(dir: string): Promise<void> {
    await mkdir(dir, { recursive: true });
    for (const session of this.#sessions) {
      const result = (await this.#call(session, 'Profiler.stop')) as { profile?: Profile } | undefined;
      if (!result?.profile) continue;
      await writeFile(join(dir, `${session.label}.cpuprofile`), JSON.stringify(result.profile));
      process.stderr.write(`${session.label}:\n${heaviest(result.profile, 25)}\n`);
    }
  }

  #call(session: Session, method: string, params: object = {}): Promise<unknown> {
    const id = this.#next++;
    const answered = new Promise<unknown>((resolve) => this.#pending.set(id, resolve));
    void this.#cdp.send('Target.sendMessageToTarget', {
      sessionId: session.id,
      message: JSON.stringify({ id, method, params }),
    });
    return answered;
  }
}

/** The `top` functions by self time, as lines "ms  name  file:line". */
function heaviest(profile: Profile, top: number): string {
  const selfMs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) {
    selfMs.set(samples[i]!, (selfMs.get(samples[i]!) ?? 0) + (deltas[i + 1] ?? 0) / 1000);
  }
  const byName = new Map<string, number>();
  for (const node of profile.nodes) {
    const { functionName, url, lineNumber } = node.callFrame;
    const key = `${functionName || '(anonymous)'}  ${url.split('/').pop() ?? ''}:${lineNumber + 1}`;
    byName.set(key, (byName.get(key) ?? 0) + (selfMs.get(node.id) ?? 0));
  }
  const total = [...byName.values()].reduce((a, b) => a + b, 0);
  return [
    `  total ${total.toFixed(0)} ms`,
    ...[...byName.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, ms]) => `  ${ms.toFixed(0).padStart(8)} ms  ${name}`),
  ].join('\n');
}
