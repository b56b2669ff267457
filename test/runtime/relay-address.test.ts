/**
 * The relay a browser founding a mesh proposes (runtime/machine-env.ts): the one that served the
 * page, or the one an operator's link names with `?relay=` (an app served apart from its relays).
 */
import { describe, expect, it } from 'vitest';
import { defaultRelayUrl, proposedRelayUrl } from '../../src/runtime/machine-env.js';

const at = (href: string) => new URL(href) as unknown as Location;

describe('the relay a new mesh proposes', () => {
  it('is the relay that served the page, over TLS when the page is', () => {
    expect(defaultRelayUrl(at('http://127.0.0.1:8787/'))).toBe('ws://127.0.0.1:8787/ws');
    expect(defaultRelayUrl(at('https://mesh.example.org/app/'))).toBe('wss://mesh.example.org/ws');
    expect(proposedRelayUrl(at('https://mesh.example.org/'))).toBe('wss://mesh.example.org/ws');
  });

  it('is the one the link names, if it is a relay address', () => {
    const named = 'wss://relay.example.org/ws';
    expect(proposedRelayUrl(at(`https://app.example.org/?relay=${encodeURIComponent(named)}`))).toBe(named);
    for (const bad of ['https://relay.example.org', 'javascript:alert(1)', '', 'relay.example.org']) {
      expect(proposedRelayUrl(at(`https://app.example.org/?relay=${encodeURIComponent(bad)}`)), bad).toBe(
        'wss://app.example.org/ws',
      );
    }
  });
});
