// A plain static server for the built example sites (build/examples/): files
// as they are, a folder answered by its index.html (a request without the
// trailing slash is redirected to it, as static hosts do), no other rewrite.
// Each HTML response carries the site's Content-Security-Policy, with the
// SHA-256 hashes of the inline scripts of that file added to script-src when
// the policy asks for it (the frameworks' own theme scripts: see
// docs/embedding.md). Also COOP/COEP, as the other browser tests, so the
// threaded build runs.
import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { mimeType } from '../../scripts/serve.mjs';

/** 'sha256-…' of every inline <script> (no src) of an HTML text. */
export function inlineScriptHashes(html) {
  const out = new Set();
  for (const m of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)) {
    if (/\bsrc\s*=/.test(m[1]) || m[2] === '') continue;
    out.add(`'sha256-${crypto.createHash('sha256').update(m[2], 'utf8').digest('base64')}'`);
  }
  return [...out];
}

/**
 * @param {{ root: string, csp: (html: string) => string }} opts
 *   csp: the policy for one HTML file (given its text).
 */
export async function startSiteServer({ root, csp }) {
  const rootReal = await fsp.realpath(root);
  const requests = [];
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url, 'http://localhost');
    requests.push(url.pathname);
    const base = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp', 'X-Content-Type-Options': 'nosniff' };
    const fail = (status, extra = {}) => {
      res.writeHead(status, { ...base, 'Content-Type': 'text/plain', ...extra });
      res.end(`${status}\n`);
    };
    let rel;
    try {
      rel = decodeURIComponent(url.pathname);
    } catch {
      return fail(400);
    }
    let file = path.join(rootReal, ...rel.split('/').filter(Boolean));
    if (!file.startsWith(rootReal)) return fail(404);
    // Browsers ask for /favicon.ico on their own (as scripts/serve.mjs: "no content", not a 404).
    if (rel === '/favicon.ico' && !fs.existsSync(file)) {
      res.writeHead(204, base);
      return res.end();
    }
    try {
      let st = await fsp.stat(file);
      if (st.isDirectory()) {
        if (!rel.endsWith('/')) return fail(301, { Location: url.pathname + '/' + url.search });
        file = path.join(file, 'index.html');
        st = await fsp.stat(file);
      }
      const headers = { ...base, 'Content-Type': mimeType(file), 'Cache-Control': 'no-cache' };
      if (file.endsWith('.html')) {
        const html = await fsp.readFile(file, 'utf8');
        headers['Content-Security-Policy'] = csp(html);
        res.writeHead(200, headers);
        return res.end(html);
      }
      headers['Content-Length'] = st.size;
      res.writeHead(200, headers);
      fs.createReadStream(file).pipe(res);
    } catch {
      fail(404);
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    requests,
    close: () => new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections?.();
    }),
  };
}
