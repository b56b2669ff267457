/**
 * What `import("crypto")` gives in the browser bundle. @hpke/common reaches for Node's
 * crypto module only where `globalThis.crypto` is missing (Node 18 and older), which no
 * browser is; aliasing it here (vite.config.ts) answers with the page's own WebCrypto instead
 * of an externalised module, and keeps the build free of the warning it printed four times.
 */
export const webcrypto: Crypto = globalThis.crypto;
export default { webcrypto };
