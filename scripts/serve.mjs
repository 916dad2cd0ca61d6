#!/usr/bin/env node
// serve.mjs — a dependency-free static file server for the attention-lab repo.
//
//   node scripts/serve.mjs [--port N] [--host H] [--root DIR] [--no-csp] [--quiet]
//
// Serves the repository root on http://127.0.0.1:8080/ (PORT env or --port;
// --port 0 picks a free port) and redirects `/` to the tutorial page
// `/web/page/`. Every response carries the headers the page is tested under:
//   Content-Security-Policy: default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'
//   Cross-Origin-Opener-Policy: same-origin
//   Cross-Origin-Embedder-Policy: require-corp
// (--no-csp drops the CSP header only.) Only GET and HEAD; no directory
// listings; dotfiles (.git, …) and anything outside the root (`..`, encoded
// or not, and symlinks that leave it) are refused.
//
// Tests reuse it:
//   import { startServer } from '../../scripts/serve.mjs';
//   const { url, close } = await startServer({ port: 0 });
//   ...; await close();

import http from 'node:http';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export const DEFAULT_PORT = 8080;
export const DEFAULT_HOST = '127.0.0.1';
export const CSP =
  "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'";

export const MIME_TYPES = Object.freeze({
  '.html': 'text/html; charset=utf-8',
  '.htm': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.cjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.jsonc': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.wgsl': 'text/plain; charset=utf-8',
  '.ts': 'text/plain; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
  '.csv': 'text/csv; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.otf': 'font/otf',
  '.bin': 'application/octet-stream',
});

/** MIME type for a file name (application/octet-stream when unknown). */
export function mimeType(fileName) {
  return MIME_TYPES[path.extname(fileName).toLowerCase()] ?? 'application/octet-stream';
}

function securityHeaders(csp) {
  const h = {
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Embedder-Policy': 'require-corp',
    'Cross-Origin-Resource-Policy': 'same-origin',
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
  };
  if (csp) h['Content-Security-Policy'] = CSP;
  return h;
}

function isInside(root, p) {
  return p === root || p.startsWith(root.endsWith(path.sep) ? root : root + path.sep);
}

/**
 * Maps a URL pathname to a file system path under root, or null when the
 * path is malformed, contains a dot segment or a NUL, or leaves the root.
 */
function resolveRequestPath(root, pathname) {
  let decoded;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    return null;
  }
  if (decoded.includes('\0') || decoded.includes('\\')) return null;
  const segments = decoded.split('/').filter((s) => s !== '');
  // Refuse `.`/`..` and dotfiles (.git, .gl, .env …) outright.
  if (segments.some((s) => s.startsWith('.'))) return null;
  const resolved = path.resolve(root, ...segments);
  return isInside(root, resolved) ? resolved : null;
}

/**
 * Starts the server.
 * @param {{port?: number, root?: string, host?: string, csp?: boolean, quiet?: boolean,
 *          redirectRoot?: string}} [options]
 *   port: 0 picks a free port (default 8080); root: the directory served (default
 *   the repo root); host: default 127.0.0.1; csp: send the CSP header (default
 *   true); redirectRoot: where `/` redirects (default '/web/page/').
 * @returns {Promise<{server: http.Server, url: string, port: number, host: string,
 *          root: string, close: () => Promise<void>}>}
 */
export async function startServer({
  port = DEFAULT_PORT,
  root = REPO_ROOT,
  host = DEFAULT_HOST,
  csp = true,
  quiet = true,
  redirectRoot = '/web/page/',
} = {}) {
  const rootReal = await fsp.realpath(path.resolve(root));
  const baseHeaders = securityHeaders(csp);

  const send = (res, status, body, extra = {}) => {
    const buf = Buffer.from(body, 'utf8');
    res.writeHead(status, {
      ...baseHeaders,
      'Content-Type': 'text/plain; charset=utf-8',
      'Content-Length': buf.length,
      'Cache-Control': 'no-store',
      ...extra,
    });
    res.end(res.req.method === 'HEAD' ? undefined : buf);
  };

  const handle = async (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return send(res, 405, 'Method Not Allowed\n', { Allow: 'GET, HEAD' });
    }
    let url;
    try {
      url = new URL(req.url, 'http://localhost');
    } catch {
      return send(res, 400, 'Bad Request\n');
    }
    if (url.pathname === '/' && redirectRoot && redirectRoot !== '/') {
      return send(res, 302, `Found: ${redirectRoot}\n`, { Location: redirectRoot + url.search });
    }
    const filePath = resolveRequestPath(rootReal, url.pathname);
    if (!filePath) return send(res, 404, 'Not Found\n');
    // Browsers ask for /favicon.ico on their own; answer "no content" rather
    // than a 404 that shows up as a console error in the page tests.
    if (url.pathname === '/favicon.ico' && !fs.existsSync(filePath)) {
      res.writeHead(204, { ...baseHeaders, 'Cache-Control': 'max-age=3600' });
      return res.end();
    }

    let real;
    let stat;
    try {
      real = await fsp.realpath(filePath);
      // A symlink inside the tree must not lead out of it.
      if (!isInside(rootReal, real)) return send(res, 404, 'Not Found\n');
      stat = await fsp.stat(real);
      if (stat.isDirectory()) {
        if (!url.pathname.endsWith('/')) {
          return send(res, 301, 'Moved Permanently\n', {
            Location: url.pathname + '/' + url.search,
          });
        }
        real = path.join(real, 'index.html');
        stat = await fsp.stat(real); // no index.html → 404, never a listing
      }
      if (!stat.isFile()) return send(res, 404, 'Not Found\n');
    } catch {
      return send(res, 404, 'Not Found\n');
    }

    const etag = `W/"${stat.size.toString(16)}-${Math.floor(stat.mtimeMs).toString(16)}"`;
    const headers = {
      ...baseHeaders,
      'Content-Type': mimeType(real),
      'Cache-Control': 'no-cache',
      ETag: etag,
      'Last-Modified': stat.mtime.toUTCString(),
    };
    if (req.headers['if-none-match'] === etag) {
      res.writeHead(304, headers);
      return res.end();
    }
    headers['Content-Length'] = stat.size;
    if (req.method === 'HEAD') {
      res.writeHead(200, headers);
      return res.end();
    }
    const stream = fs.createReadStream(real);
    stream.on('error', (e) => {
      if (!res.headersSent) send(res, 500, 'Internal Server Error\n');
      else res.destroy(e);
    });
    stream.once('open', () => res.writeHead(200, headers));
    stream.pipe(res);
  };

  const server = http.createServer((req, res) => {
    if (!quiet) {
      res.on('finish', () => console.log(`${res.statusCode} ${req.method} ${req.url}`));
    }
    handle(req, res).catch((e) => {
      if (!res.headersSent) send(res, 500, 'Internal Server Error\n');
      else res.destroy(e);
    });
  });

  await new Promise((resolve, reject) => {
    const onError = (e) => reject(e);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });

  const actualPort = server.address().port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  const url = `http://${urlHost}:${actualPort}/`;
  let closing = null;
  const close = () => {
    closing ??= new Promise((resolve, reject) => {
      server.close((e) => (e && e.code !== 'ERR_SERVER_NOT_RUNNING' ? reject(e) : resolve()));
      server.closeAllConnections?.();
    });
    return closing;
  };
  return { server, url, port: actualPort, host, root: rootReal, close };
}

function parseArgs(argv) {
  const opts = {
    port: process.env.PORT !== undefined && process.env.PORT !== '' ? process.env.PORT : DEFAULT_PORT,
    host: DEFAULT_HOST,
    root: REPO_ROOT,
    csp: true,
    quiet: true,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const [flag, inline] = a.startsWith('--') && a.includes('=') ? a.split(/=(.*)/s, 2) : [a, undefined];
    const value = () => {
      if (inline !== undefined) return inline;
      if (i + 1 >= argv.length) throw new Error(`${flag} needs a value`);
      return argv[++i];
    };
    switch (flag) {
      case '--port':
      case '-p':
        opts.port = value();
        break;
      case '--host':
        opts.host = value();
        break;
      case '--root':
        opts.root = path.resolve(value());
        break;
      case '--no-csp':
        opts.csp = false;
        break;
      case '--verbose':
        opts.quiet = false;
        break;
      case '--quiet':
        opts.quiet = true;
        break;
      case '--help':
      case '-h':
        opts.help = true;
        break;
      default:
        throw new Error(`unknown argument '${a}'`);
    }
  }
  const n = Number(opts.port);
  if (!Number.isInteger(n) || n < 0 || n > 65535) {
    throw new Error(`port must be an integer in [0, 65535], got '${opts.port}'`);
  }
  opts.port = n;
  return opts;
}

const USAGE = `usage: node scripts/serve.mjs [--port N] [--host H] [--root DIR] [--no-csp] [--verbose]
  --port N   port to listen on (default: $PORT or ${DEFAULT_PORT}; 0 = any free port)
  --host H   address to bind (default ${DEFAULT_HOST})
  --root DIR directory to serve (default: the repository root)
  --no-csp   do not send the Content-Security-Policy header
  --verbose  log each request`;

async function main() {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (e) {
    console.error(`serve: ${e.message}\n${USAGE}`);
    process.exit(2);
  }
  if (opts.help) {
    console.log(USAGE);
    return;
  }
  let srv;
  try {
    srv = await startServer(opts);
  } catch (e) {
    if (e.code === 'EADDRINUSE') {
      console.error(`serve: ${opts.host}:${opts.port} is already in use; try --port ${opts.port + 1} (or PORT=…)`);
    } else {
      console.error(`serve: cannot listen on ${opts.host}:${opts.port}: ${e.message}`);
    }
    process.exit(1);
  }
  console.log(`attention-lab: serving ${srv.root}${opts.csp ? '' : ' (no CSP)'}`);
  console.log(`attention-lab: tutorial at ${srv.url}web/page/  (Ctrl+C to stop)`);
  const stop = () => {
    srv.close().then(() => process.exit(0), () => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main();
}
