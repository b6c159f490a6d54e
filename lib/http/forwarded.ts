// Who the client is when reverse proxies stand in front (nginx, HAProxy): the forwarding headers
// (X-Forwarded-For or Forwarded, X-Forwarded-Proto, X-Forwarded-Host) are believed only from the
// addresses in TRUSTED_PROXIES, and proxy-addr walks the chain back to the first address that is
// not one of them (docs/operations.md, Behind a reverse proxy). And which addresses count as one
// client where clients are counted or take turns: an IPv6 /64 is one (addressGroup).
import type { IncomingMessage } from 'node:http';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import proxyaddr from 'proxy-addr';

export interface Client {
  /** The client's address: the socket's, or the first untrusted one the trusted proxies name. */
  address: string;
  /** How the error log names the client: 'ip:port', the port only where it is the client's own. */
  label: string;
  /** Whether the client asked over TLS: of this server, or of a trusted proxy that says so. */
  https: boolean;
  /** The Host a trusted proxy was asked for (X-Forwarded-Host, Forwarded host=), or null. */
  host: string | null;
  /** A forwarding header from a trusted proxy that could not be read, and was ignored. */
  malformed: string | null;
}

export type Trust = (address: string, hop: number) => boolean;

/** The words TRUSTED_PROXIES knows besides addresses and CIDR ranges. */
const ranges: Record<string, string[]> = { loopback: ['loopback'], private: ['uniquelocal', 'linklocal'] };

/**
 * A list of addresses, CIDR ranges and the words loopback and private as a test of an address;
 * null for an empty list. setting names the list in the error thrown for an entry that is no address.
 */
export function compileTrust(list: readonly string[], setting = 'TRUSTED_PROXIES'): Trust | null {
  if (list.length === 0) return null;
  try {
    return proxyaddr.compile(list.flatMap((entry) => ranges[entry] ?? [entry]));
  } catch (err) {
    throw new Error(
      `${setting}: ${(err as Error).message}; list addresses, CIDR ranges such as 10.0.0.0/8, loopback or private.`,
    );
  }
}

const noForwarding = (req: IncomingMessage): boolean =>
  req.headers['x-forwarded-for'] === undefined &&
  req.headers.forwarded === undefined &&
  req.headers['x-forwarded-proto'] === undefined &&
  req.headers['x-forwarded-host'] === undefined;

export function clientOf(req: IncomingMessage, trust: Trust | null): Client {
  const socketAddress = plain(req.socket.remoteAddress ?? '-');
  const own: Client = {
    address: socketAddress,
    label: `${socketAddress}:${req.socket.remotePort ?? 0}`,
    https: (req.socket as { encrypted?: boolean }).encrypted === true,
    host: null,
    malformed: null,
  };
  // The peer is no trusted proxy (or nobody is): what it says of others is not believed.
  if (trust === null || noForwarding(req) || !trust(req.socket.remoteAddress ?? '', 0)) return own;
  const forwarded = readForwarded(req);
  if (typeof forwarded === 'string') return { ...own, malformed: forwarded };
  const chain = proxyaddr.all(
    { socket: req.socket, connection: req.socket, headers: { 'x-forwarded-for': forwarded.for.join(', ') } } as never,
    trust,
  );
  const address = plain(chain[chain.length - 1] as string);
  return {
    address,
    label: address === socketAddress ? own.label : address,
    https: own.https || forwarded.proto === 'https',
    host: forwarded.host,
    malformed: null,
  };
}

/**
 * The client an address counts as where clients are counted (the login throttle) or take turns
 * (the password checks): an IPv4 address as it is, IPv4-mapped IPv6 as IPv4, and IPv6 by its /64,
 * the block one network (one home, one office) gets, so that the 2^64 addresses of one client are
 * one client (RFC 6177, RFC 4291 section 2.5.1): 2001:db8:1:2::/64. Anything else stays as it is.
 */
export function addressGroup(address: string): string {
  if (net.isIP(address.replace(/%.*$/, '')) === 0) return address;
  const ip = ipaddr.process(address);
  if (ip instanceof ipaddr.IPv4) return ip.toString();
  return `${new ipaddr.IPv6([...ip.parts.slice(0, 4), 0, 0, 0, 0]).toString()}/64`;
}

interface Forwarded {
  /** The addresses the proxies name, the client's first. */
  for: string[];
  proto: string | null;
  host: string | null;
}

/**
 * The forwarding headers: the X-Forwarded-* ones, which nginx and HAProxy set, or RFC 7239's
 * Forwarded when there is no X-Forwarded-For. Never Forwarded beside X-Forwarded-For: a proxy
 * that appends to one passes the other on as the client sent it. A string says what is wrong.
 */
function readForwarded(req: IncomingMessage): Forwarded | string {
  const header = req.headers.forwarded;
  if (header !== undefined && req.headers['x-forwarded-for'] === undefined) return readRfc7239(header);
  const list = String(req.headers['x-forwarded-for'] ?? '')
    .split(',')
    .map((a) => a.trim())
    .filter((a) => a !== '');
  const bad = list.find((a) => net.isIP(a) === 0);
  if (bad !== undefined) return `X-Forwarded-For names "${bad.slice(0, 60)}", which is no address`;
  return {
    for: list,
    proto: firstOf(req.headers['x-forwarded-proto']),
    host: firstOf(req.headers['x-forwarded-host']),
  };
}

/** Forwarded: for=192.0.2.60;proto=https;host=example.org, for="[2001:db8::17]:4711" */
function readRfc7239(header: string): Forwarded | string {
  const result: Forwarded = { for: [], proto: null, host: null };
  for (const element of header.split(',')) {
    for (const pair of element.split(';')) {
      const eq = pair.indexOf('=');
      if (eq === -1) continue;
      const key = pair.slice(0, eq).trim().toLowerCase();
      const value = pair
        .slice(eq + 1)
        .trim()
        .replace(/^"(.*)"$/, '$1');
      if (key === 'for') {
        const address = value.startsWith('[') ? value.slice(1, value.indexOf(']')) : value.replace(/:\d+$/, '');
        if (net.isIP(address) === 0) return `Forwarded names "${value.slice(0, 60)}", which is no address`;
        result.for.push(address);
      } else if (key === 'proto' && result.proto === null) {
        result.proto = value.toLowerCase();
      } else if (key === 'host' && result.host === null) {
        result.host = value;
      }
    }
  }
  return result;
}

function firstOf(header: string | string[] | undefined): string | null {
  const value = (Array.isArray(header) ? header[0] : header)?.split(',')[0]?.trim().toLowerCase();
  return value ? value : null;
}

function plain(address: string): string {
  return address.replace(/^::ffff:/, '');
}
