/** Locating a domain's card and its notes on the Domains view, and writing a note there. */
import type { Page } from '@playwright/test';
import { expect } from './relay-process.ts';

export const domain = (page: Page, name: string) => page.locator(`[data-testid="domain"][data-domain="${name}"]`);
export const note = (page: Page, text: string) => page.getByTestId('note').filter({ hasText: text });

export async function writeNote(page: Page, domainName: string, title: string): Promise<void> {
  await page.getByTestId('note-domain').selectOption(domainName);
  await page.getByTestId('note-title').fill(title);
  await page.getByTestId('note-save').click();
  await expect(note(page, title)).toBeVisible();
}
