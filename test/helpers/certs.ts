// Throwaway TLS certificates made with the openssl CLI: a CA and a server
// certificate it signed, so tests verify the chain instead of turning
// verification off.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Paths of the files makeTestCertificates wrote, plus the CA's PEM text. */
export interface TestCertificates {
  caFile: string;
  caPem: string;
  certFile: string;
  keyFile: string;
}

// Our own config, so the system's openssl.cnf defaults cannot add or clash
// with extensions. P-256 keys: quick to generate, accepted everywhere.
const OPENSSL_CONFIG = `[req]
distinguished_name = dn
prompt = no
[dn]
CN = clubhouse test
[ca_ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
`;

/**
 * Writes ca.pem, server.pem and server.key into `dir`: a fresh CA and a
 * server certificate for localhost / 127.0.0.1 signed by it, valid 7 days.
 */
export async function makeTestCertificates(dir: string): Promise<TestCertificates> {
  if (/\s/.test(dir)) throw new Error(`certificate dir must not contain spaces: ${dir}`);
  const file = (name: string): string => path.join(dir, name);
  // Words split on spaces; the paths have none (checked above).
  const openssl = (words: string, ...more: string[]) => run('openssl', [...words.split(' '), ...more]);
  await writeFile(file('openssl.cnf'), OPENSSL_CONFIG);
  const common = `-config ${file('openssl.cnf')} -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes`;
  await openssl(
    `req -x509 ${common} -extensions ca_ext -days 7 -keyout ${file('ca.key')} -out ${file('ca.pem')}`,
    '-subj',
    '/CN=clubhouse test CA',
  );
  await openssl(
    `req -new ${common} -subj /CN=localhost -keyout ${file('server.key')} -out ${file('server.csr')}`,
  );
  await openssl(
    `x509 -req -in ${file('server.csr')} -CA ${file('ca.pem')} -CAkey ${file('ca.key')} -days 7 ` +
      `-set_serial 0x${randomBytes(8).toString('hex')} ` +
      `-extfile ${file('openssl.cnf')} -extensions server_ext -out ${file('server.pem')}`,
  );
  return {
    caFile: file('ca.pem'),
    caPem: await readFile(file('ca.pem'), 'utf8'),
    certFile: file('server.pem'),
    keyFile: file('server.key'),
  };
}
