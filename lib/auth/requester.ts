// The requester of one request, worked out only when something asks: most documents never do,
// and then no cookie is read and no session looked up.
import type { Exchange } from '../http/index.ts';
import type { Account } from './account-store.ts';
import type { Identity, RequestAuth, SessionControl } from './request-auth.ts';

export class Requester {
  private auth: RequestAuth | null = null;
  /**
   * A SessionControl that makes the real one when a method is called. A `get session()` accessor
   * instead would give every request's object a hidden class of its own (docs/performance.md,
   * Garbage collection).
   */
  readonly session: SessionControl;

  constructor(private readonly make: () => RequestAuth) {
    this.session = {
      expired: () => this.get().session.expired(),
      csrfToken: () => this.get().session.csrfToken(),
      checkCsrf: (token) => this.get().session.checkCsrf(token),
      loginToken: () => this.get().session.loginToken(),
      checkLoginToken: (token) => this.get().session.checkLoginToken(token),
      start: (account) => this.get().session.start(account),
      end: () => this.get().session.end(),
    };
  }

  /** The requester's authentication, made on first use. */
  private get(): RequestAuth {
    return (this.auth ??= this.make());
  }

  /** Whether anything asked who is asking: the answer is then private. */
  get asked(): boolean {
    return this.auth?.used === true;
  }

  /** The account of the session cookie or of Basic credentials; null for anyone anonymous. */
  identify(): Promise<Identity | null> {
    return this.get().identify();
  }

  /** Checks a login; null for an unknown user and a wrong password alike. */
  authenticate(username: string, password: string): Promise<Account | null> {
    return this.get().authenticate(username, password);
  }

  /** After the script: Set-Cookie, %u and the page header's user, when anything asked (RequestAuth.settle). */
  async settle(ex: Exchange): Promise<void> {
    if (this.auth) await this.auth.settle(ex);
  }
}
