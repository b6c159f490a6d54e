// The interface described for client writers: OpenAPI 3.1 at /openapi.json, gathered from the
// fragment every script declares next to its code (`export const api`; lib/page/api-description.ts
// writes the document). test/openapi.test.ts checks it against the rewrite table, and its
// parameters and statuses against the server's answers to a table of requests.
import type { ApiFragment, Document, LinkFn, SiteScript, View } from '../lib/page/index.ts';
import { describeSite, siteScripts } from '../lib/page/index.ts';

/** JSON only, as an OpenAPI document. */
export const only = { format: 'json', type: 'application/vnd.oai.openapi+json;version=3.1' } as const;

// It depends on nothing but the scripts and the request's origin.
export const cacheable = true;

export async function GET(): Promise<Document<SiteScript[]>> {
  return { path: '/openapi', title: 'OpenAPI', data: await siteScripts() };
}

function toJson(scripts: SiteScript[], link: LinkFn) {
  return describeSite(scripts, link);
}

/** Its addresses in /openapi.json (lib/page/api-description.ts). */
export const api: ApiFragment = ({ notModified }) => [
  {
    path: '/openapi',
    // Made of the scripts alone.
    database: false,
    operations: {
      get: {
        summary: 'This document; usually asked for as /openapi.json.',
        responses: {
          200: {
            description: 'OpenAPI 3.1.',
            content: { 'application/vnd.oai.openapi+json;version=3.1': { schema: { type: 'object' } } },
          },
          304: notModified,
        },
      },
    },
  },
];

export const view: View = { template: 'openapi', toJson };
