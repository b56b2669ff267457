/**
 * Coordination between the tabs of one browser that share a machine's
 * IndexedDB. A Web Lock elects the one tab that holds the relay session (the
 * relay admits one session per endpoint, so two tabs would keep displacing each
 * other); a BroadcastChannel tells the other tabs that shared state changed, or
 * that they must reload because the machine left a group.
 */

type TabMessage = { readonly t: 'changed' } | { readonly t: 'reload' };

export class TabSession {
  readonly #channel: BroadcastChannel;
  #requested = false;

  constructor(onChanged: () => void, name = 'sov-node') {
    this.#channel = new BroadcastChannel(name);
    this.#channel.onmessage = (event: MessageEvent<TabMessage>) => {
      if (event.data.t === 'reload') location.reload();
      else onChanged();
    };
  }

  /**
   * Queues for leadership; `lead` runs once this tab is elected and keeps the
   * lock for the tab's lifetime, so the next tab in line takes over when it closes.
   */
  requestLeadership(lead: () => void): void {
    if (this.#requested) return;
    this.#requested = true;
    void navigator.locks.request('sov-relay-session', () => {
      lead();
      return new Promise<never>(() => undefined);
    });
  }

  announceChange(): void {
    this.#channel.postMessage({ t: 'changed' } satisfies TabMessage);
  }

  /** Reloads every tab of this machine, this one included. */
  reloadAll(): void {
    this.#channel.postMessage({ t: 'reload' } satisfies TabMessage);
    location.reload();
  }

  close(): void {
    this.#channel.close();
  }
}
