/**
 * Test-only page for the QR components, built by vite.harness.config.ts and never part of the app.
 *
 *   qr.html?mode=code&text=…   shows QrCode for `text`
 *   qr.html?mode=scan          runs QrScanner; each onResult call is counted on `scan-result`
 */
import { mount } from 'svelte';
import QrCode from '../../../src/app/QrCode.svelte';
import QrScanner from '../../../src/app/QrScanner.svelte';

const target = document.getElementById('harness')!;
const output = document.querySelector<HTMLOutputElement>('[data-testid="scan-result"]')!;
const params = new URLSearchParams(location.search);

function recordResult(text: string): void {
  output.value = text;
  output.dataset['calls'] = String(Number(output.dataset['calls']) + 1);
}

switch (params.get('mode')) {
  case 'code':
    target.style.width = params.get('width') ?? '340px';
    mount(QrCode, { target, props: { text: params.get('text') ?? '', label: 'Pairing ticket as a QR code' } });
    break;
  case 'scan':
    mount(QrScanner, {
      target,
      props: { onResult: recordResult, onCancel: () => (output.dataset['cancelled'] = 'true') },
    });
    break;
  default:
    target.textContent = 'qr-harness: unknown mode; use ?mode=code&text=… or ?mode=scan';
}
