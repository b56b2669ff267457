/** A self-signed P-256 certificate for 127.0.0.1 (one day), made with openssl for HTTPS tests. */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/** Writes `cert.pem` and `key.pem` into `dir`; their paths. */
export function selfSignedCert(dir: string): { cert: string; key: string } {
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1']
      .concat(['-keyout', key, '-out', cert, '-subj', '/CN=127.0.0.1'])
      .concat(['-addext', 'subjectAltName=IP:127.0.0.1']),
    { stdio: 'ignore' },
  );
  return { cert, key };
}
