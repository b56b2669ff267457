/**
 * Creating data domains and choosing their readers (src/runtime/domain-admin.ts), against
 * fakes: only an admin, only a valid and unused name, only with the sequencer reachable; the
 * CONTROL record is written before the group is founded; readers are limited to the other
 * live machines; `unreadable` counts the sealed rows held per domain and tries every key.
 */
import { describe, expect, it } from 'vitest';
import { err, ok } from '../../src/core/result.js';
import { DomainAdmin } from '../../src/runtime/domain-admin.js';

function fixture(over: { admin?: boolean; online?: boolean; existing?: string[]; recordFails?: boolean } = {}) {
  const log: string[] = [];
  const admin = new DomainAdmin({
    domains: {
      views: [
        { domain: 'GENERAL', removed: false, awaiting: false },
        { domain: 'OLD', removed: true, awaiting: false },
        { domain: 'SOON', removed: false, awaiting: true },
      ] as never,
      create: async (domain, members) => {
        log.push(`create ${domain} ${members.join(',')}`);
        return ok(undefined);
      },
      add: async (domain, signers, history) => {
        log.push(`add ${domain} ${signers.join(',')} ${history}`);
        return ok(undefined);
      },
      remove: async (domain, signers) => {
        log.push(`remove ${domain} ${signers.join(',')}`);
        return ok(undefined);
      },
      rotate: async (domain) => {
        log.push(`rotate ${domain}`);
        return ok(undefined);
      },
    },
    roster: { isAdmin: () => over.admin ?? true, others: () => ['b2', 'c3'] },
    store: {
      row: async (_table, row) => ((over.existing ?? []).includes(row) ? ({} as never) : undefined),
      opaque: async () =>
        [
          { domain: 'LAB', sealed: new Uint8Array(1) },
          { domain: 'LAB', sealed: new Uint8Array(2) },
          { domain: 'HR', sealed: new Uint8Array(3) },
        ] as never,
    },
    crypto: { tryEveryKey: async (sealed) => err({ type: 'NoKeyOpens', tried: sealed.length }) as never },
    online: () => over.online ?? true,
    record: async (domain, purpose) => {
      log.push(`record ${domain} ${purpose.length}`);
      return over.recordFails ? err({ type: 'Refused' }) : ok(undefined);
    },
    changed: async () => void log.push('changed'),
  });
  return { admin, log };
}

describe('domain admin', () => {
  it('records the domain, then founds its group with the live readers picked', async () => {
    const f = fixture();
    const made = await f.admin.create(' lab_2 ', 'x'.repeat(500), ['b2', 'gone', 'a1']);
    expect(made).toEqual(ok(undefined));
    expect(f.log).toEqual(['record LAB_2 200', 'create LAB_2 b2', 'changed']);
  });

  it.each([
    [{ admin: false }, 'LAB', 'only an admin'],
    [{}, 'CONTROL', 'capital letters'],
    [{}, 'x', 'capital letters'],
    [{}, 'a b', 'capital letters'],
    [{}, 'GENERAL', 'capital letters'],
    [{}, 'OLD', 'exists already'],
    [{ existing: ['LAB'] }, 'LAB', 'exists already'],
    [{ online: false }, 'LAB', 'connect to the relay'],
  ])('refuses %o %s with a typed reason and writes nothing', async (over, name, reason) => {
    const f = fixture(over);
    const made = await f.admin.create(name, '', ['b2']);
    expect(made.ok).toBe(false);
    if (!made.ok) {
      expect(made.error.type).toBe('InvalidDomain');
      expect('reason' in made.error ? made.error.reason : '').toContain(reason);
    }
    expect(f.log).toEqual([]);
  });

  it('founds no group when the record cannot be written', async () => {
    const f = fixture({ recordFails: true });
    const made = await f.admin.create('LAB', '', []);
    expect(made).toEqual(err({ type: 'InvalidDomain', reason: 'Refused' }));
    expect(f.log).toEqual(['record LAB 0']);
  });

  it('adds and removes readers, and reads only domains whose current key it holds', async () => {
    const f = fixture();
    await f.admin.addReader('LAB', 'b2', 'forward');
    await f.admin.removeReader('LAB', 'c3');
    expect(f.log).toEqual(['add LAB b2 forward', 'changed', 'remove LAB c3', 'changed']);
    expect(['GENERAL', 'OLD', 'SOON', 'LAB'].map((d) => f.admin.reads(d))).toEqual([true, false, false, false]);
  });

  it('rotates a domain it reads, as an admin with the sequencer reachable; refuses otherwise, changing nothing', async () => {
    const f = fixture();
    expect(await f.admin.rotate('GENERAL')).toEqual(ok(undefined));
    expect(f.log).toEqual(['rotate GENERAL', 'changed']);
    for (const [over, domain, reason] of [
      [{ admin: false }, 'GENERAL', 'only an admin'],
      [{}, 'OLD', 'does not read OLD'],
      [{}, 'SOON', 'does not read SOON'],
      [{ online: false }, 'GENERAL', 'connect to the relay'],
    ] as const) {
      const g = fixture(over);
      const refused = await g.admin.rotate(domain);
      expect(!refused.ok && refused.error.type).toBe('InvalidDomain');
      expect(!refused.ok && 'reason' in refused.error && refused.error.reason).toContain(reason);
      expect(g.log).toEqual([]);
    }
  });

  it('counts what it holds without reading, by domain, and tries every key on it', async () => {
    const { byDomain, attempt } = await fixture().admin.unreadable();
    expect(byDomain).toEqual({ LAB: 2, HR: 1 });
    expect(attempt).toEqual(err({ type: 'NoKeyOpens', tried: 3 }));
  });
});
