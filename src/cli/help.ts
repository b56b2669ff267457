/**
 * What `sov --help` and `sov COMMAND --help` print: every option with its default and an
 * example. Kept apart from the commands so that help loads nothing else.
 */

export const OVERVIEW = `sov — the Sovereign Mesh command line

usage: sov COMMAND [options]

commands:
  relay     run a blind relay (stores and forwards ciphertext; serves the web app)
  node      run a headless machine of a mesh (a storage server or a blind archive; a loopback API)
  mcp       serve a running node's API to an AI agent's host over MCP (stdio; HTTP: node --api)
  object    write an encrypted object from a CSV file
  parquet   read a Parquet file, encrypted or not
  bench     run the benchmarks (results in bench/results/*.json)
  help      this text

  sov COMMAND --help    options of one command, with defaults and an example
  sov --version         the version

Exit codes: 0 done, 1 failed, 2 usage error.
`;

export const RELAY_HELP = `usage: sov relay [options]

A blind relay: it stores and forwards ciphertext for the meshes on it, and serves the web app
unless started with --no-app (the production set-up: code from one place, ciphertext from another).

  --port N              port to listen on (default 8787, or $SOV_PORT)
  --host ADDR           address to bind (default 127.0.0.1: this machine only)
  --data DIR            where mailboxes, objects and the relay's key live
                        (default $SOV_DATA_DIR, else ~/.local/share/sovereign-mesh)
  --static DIR          the built web app to serve (default dist/)
  --no-app              serve no code at all: only the WebSocket and the signed API
  --origin URL          a web origin (scheme://host[:port]) whose pages may use this relay, for
                        an app served elsewhere; repeat for several. Pages from any other site
                        are refused; the page this relay served itself is always accepted
  --tls-cert FILE --tls-key FILE
                        serve HTTPS and WSS with this certificate (PEM; default: plain HTTP)
  --tap FILE            record every byte received and sent (privacy audits; default: off)
  --heartbeat S         seconds between pings; a socket that misses one is cut (default 30)
  --founding open|closed
                        who may found a new mesh on this relay. open: anyone who reaches it
                        can take a new topic, push its first admission list and use a mailbox
                        and object storage under it. closed: only the meshes already here
                        are served; found yours with the relay open, then close it.
                        Default: open on a loopback address, closed on any other.
  -h, --help            this text

example:
  sov relay --host 0.0.0.0 --port 8443 --tls-cert cert.pem --tls-key key.pem --founding closed \
            --no-app --origin https://app.example.org
`;

export const NODE_HELP = `usage: sov node --role server|archive --data DIR [options]
       sov node --data DIR invite

A headless machine of a mesh. A server stores the objects of the domains its placement record
names; an archive with no placement record stores every object of the mesh. What either may read
is the admins' choice (domain membership), not its role.

  --role server|archive   what this machine is (required)
  --data DIR              where its keys, replica and objects live (required; created if new)
  --name NAME             the name other machines see (default: the role)
  --join                  join a mesh: paste the pairing ticket on standard input, then
                          confirm the six-digit code the inviting machine shows
  --restore KIT           restore a mesh from a recovery kit's file (made by an admin in the
                          app's Machines view): its recovery code on standard input
  --found --relay URL     found a new mesh on that relay (ws:// or wss://), this machine its
                          first admin
  --api 127.0.0.1:PORT    serve the loopback JSON API (/v1: status, peers, rows, objects, SQL
                          query, placement, sync, events; the OpenAPI document at
                          /v1/openapi.json) and MCP over HTTP at /mcp, with the bearer token in
                          DIR/api.token (mode 0600, made on first start); only loopback addresses
                          unless --api-tls
  --api-tls               serve the API over HTTPS with --tls-cert and --tls-key, on any address
                          (clients must trust the certificate: NODE_EXTRA_CA_CERTS for sov mcp)
  --mcp-tools NAME,…      the tools /mcp offers (default all, as for sov mcp)
  --mcp-domains DOMAIN,…  the domains whose data may leave the node through /mcp (default: none)
  --serve-app ADDR:PORT   serve the built web app too (only the app: its relays serve the rest),
                          so that the mesh's code comes from a machine of the mesh, not a relay
  --static DIR            the built app to serve (default dist/)
  --tls-cert FILE --tls-key FILE
                          serve the app (and, with --api-tls, the API) over HTTPS (PEM); the app
                          needs them on any address but the loopback
  -h, --help              this text

The invite form asks the node running in DIR (with --api) for a pairing ticket, prints it as text and as
a QR code, shows the joiner's six-digit code and admits it once you answer y.

A machine that joined, restored or founded once starts again from DIR without --join, --restore or --found. State changes, pairing
codes and notices are printed one per line; keys and tickets never are.

example:
  sov node --role archive --data /srv/sov-archive --name "cellar archive" --join < ticket.txt
  sov node --role server --data /srv/sov-restored --restore mesh.sovkit < code.txt
  sov node --role server --data /srv/sov --found --relay wss://relay.example:8443/ws --api 127.0.0.1:7420
  sov node --data /srv/sov invite
  sov node --role server --data /srv/sov --serve-app 0.0.0.0:8443 --tls-cert cert.pem --tls-key key.pem
`;

export const OBJECT_HELP = `usage: sov object write --csv FILE --out DIR [options]

Writes one encrypted object (SOP/1: Parquet with modular encryption, ZSTD pages) of every row
of a CSV file, and its sealed manifest, into DIR as <storage id>.parquet and .manifest. Column
types are inferred (boolean, int32, int64, double, timestamp, else text).

  --csv FILE              the CSV file, with a header row (required)
  --out DIR               where to write the object and its manifest (required)
  --row-group-size N      rows per row group, 1 to 10000000 (default 100000)
  --domain D              the domain the manifest names (default GENERAL)
  --table T               the table name (default: from the file name)
  --time-column C         the timestamp column whose range the manifest keeps
                          (default: the first timestamp column)
  --print-dek             also print "dek <hex>": the object's data key (handle with care)
  --print-secret          also print "secret <hex>": the object's secret (handle with care)
  -h, --help              this text

Prints the storage id on the first line, then the lines asked for.

example:
  sov object write --csv readings.csv --out objects/ --table readings --print-dek
`;

export const PARQUET_HELP = `usage: sov parquet read FILE [options]

Reads a Parquet file — encrypted (footer or column keys) or plain — and prints its schema and
rows, or writes them as CSV. A key is 16, 24 or 32 bytes, as hex or ascii:TEXT.

  --footer-key KEY        the footer key (default: none, for plaintext footers)
  --column-key PATH=KEY   a column key by dotted column path; repeat for more (default: none)
  --aad-prefix TEXT       the AAD prefix, when the writer did not store it (default: the stored one)
  --duckdb-no-aad         read an encrypted file DuckDB wrote (no aad_file_unique, no module AAD);
                          off by default, and never needed for objects of a mesh
  --csv OUT               write the rows as CSV to OUT instead of printing them
  -h, --help              this text

example:
  sov parquet read objects/3f9c….parquet --footer-key 00112233445566778899aabbccddeeff --csv rows.csv
`;

export const MCP_HELP = `usage: sov mcp --data DIR [--mcp-tools NAME,…] [--mcp-domains DOMAIN,…]

The Model Context Protocol over standard input and output, for an AI agent's host: a client of
the loopback API of the node whose data directory is DIR (start it with --api 127.0.0.1:PORT).
It acts as that machine, within the mesh's rules, and within what you allow here.

  --data DIR              the running node's data directory (required: api.url, api.token)
  --mcp-tools NAME,…      offer only these tools (default all: sync-status, sync-push,
                          sync-peers, read-rows, write-row, list-objects, query)
  --mcp-domains DOMAIN,…  the domains whose rows and objects may leave the node through MCP
                          (default: none; status and machines are not domain data)
  -h, --help              this text

Each tool call is logged on standard error with its arguments' shape, never their values.

example (an MCP host's server entry):
  sov mcp --data /srv/sov --mcp-tools sync-status,read-rows --mcp-domains GENERAL
`;
