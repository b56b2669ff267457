/**
 * A view's address is the URL's fragment: what each form of it opens.
 */
import { describe, expect, it } from 'vitest';
import { HOME, hrefOf, VIEWS, viewOf } from '../../src/app/views.ts';

describe('viewOf', () => {
  it.each([
    ['#/machines', 'machines'],
    ['#machines', 'machines'],
    ['#/query/', 'query'],
    ['#/sync', 'sync'],
    ['', HOME],
    ['#', HOME],
    ['#/', HOME],
    ['#/nowhere', HOME],
    ['#/MACHINES', HOME],
    ['#/machines/extra', HOME],
    ['#/__proto__', HOME],
  ])('%j opens %s', (hash, view) => {
    expect(viewOf(hash)).toBe(view);
  });

  it('reads back the address of every view', () => {
    for (const { id } of VIEWS) expect(viewOf(hrefOf(id))).toBe(id);
    expect(new Set(VIEWS.map((v) => v.id)).size).toBe(VIEWS.length);
  });
});
