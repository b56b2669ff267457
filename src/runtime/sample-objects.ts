/**
 * What the Objects view's "Generate sample" and "Import CSV" feed the object writer: sample
 * measurements (six devices, one reading a minute each, ending now, a few nulls and faults),
 * a row group at a time, and a file's text read in chunks, as often as the importer asks.
 */
import type { CellValue, ColumnSpec } from '../core/parquet/schema.js';
import { webRandom } from './webcrypto.js';

const SAMPLE_DEVICES = ['north-shed', 'south-field', 'pump-house', 'weir', 'orchard', 'ridge'];
export const SAMPLE_COLUMNS: readonly ColumnSpec[] = [
  { name: 'time', type: 'timestamp', nullable: false },
  { name: 'device', type: 'string', nullable: false },
  { name: 'temperature', type: 'double', nullable: true },
  { name: 'humidity', type: 'double', nullable: true },
  { name: 'pressure', type: 'double', nullable: true },
  { name: 'battery', type: 'double', nullable: true },
  { name: 'status', type: 'string', nullable: true },
];
const SAMPLE_GROUP_ROWS = 50_000;

/**
 * The text of a blob, as often as it is asked for; `read` hears, on each pass, how many
 * of its bytes that pass has read so far (and which pass it is, from 1).
 */
export function blobText(blob: Blob, read?: (bytes: number, pass: number) => void): () => AsyncIterable<string> {
  let passes = 0;
  return async function* () {
    const pass = ++passes;
    let bytes = 0;
    const counted = blob.stream().pipeThrough(
      new TransformStream<Uint8Array<ArrayBuffer>, BufferSource>({
        transform(chunk, out) {
          bytes += chunk.byteLength;
          read?.(bytes, pass);
          out.enqueue(chunk);
        },
      }),
    );
    const reader = counted.pipeThrough(new TextDecoderStream()).getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        yield value;
      }
    } finally {
      reader.releaseLock();
    }
  };
}

/** The sample's rows, SAMPLE_GROUP_ROWS at a time, ending at the minute of `now`; `upto`: rows so far. */
export function* sampleGroups(
  rows: number,
  now: number,
): Generator<{ readonly cells: Record<string, CellValue[]>; readonly upto: number }> {
  const end = Math.floor(now / 60_000) * 60_000;
  const start = end - Math.ceil(rows / SAMPLE_DEVICES.length) * 60_000;
  for (let from = 0; from < rows; from += SAMPLE_GROUP_ROWS) {
    const n = Math.min(SAMPLE_GROUP_ROWS, rows - from);
    const cells: Record<string, CellValue[]> = Object.fromEntries(SAMPLE_COLUMNS.map((c) => [c.name, []]));
    for (let i = from; i < from + n; i++) {
      const device = i % SAMPLE_DEVICES.length;
      const minute = Math.floor(i / SAMPLE_DEVICES.length);
      const phase = (minute / 1440) * 2 * Math.PI;
      const noise = webRandom.bytes(1)[0]! / 255 - 0.5;
      cells['time']!.push(start + minute * 60_000);
      cells['device']!.push(SAMPLE_DEVICES[device]!);
      cells['temperature']!.push(Math.round((12 + 8 * Math.sin(phase) + device + noise) * 100) / 100);
      cells['humidity']!.push(Math.round((60 - 20 * Math.sin(phase) + noise * 4) * 10) / 10);
      cells['pressure']!.push(i % 97 === 13 ? null : Math.round((1013 + 5 * Math.cos(phase / 7) + noise) * 10) / 10);
      cells['battery']!.push(Math.round(Math.max(0, 100 - minute / 200) * 10) / 10);
      cells['status']!.push(i % 211 === 7 ? 'fault' : i % 53 === 0 ? null : 'ok');
    }
    yield { cells, upto: from + n };
  }
}
