// The page room: the one module a handler script in scripts/ may import (the loader hands every
// script this very instance): what a script receives and returns, the nouns person, werk and loan
// with their stores, forms, and the rules of changing data.
// May import: auth, db, http.
export type { Account, Identity } from '../auth/index.ts';
export { findAccount } from '../auth/index.ts';
export type { Db, Queryable } from '../db/index.ts';
export type { FieldError, Format } from '../http/index.ts';
export { HttpError, NoContent, Redirect } from '../http/index.ts';
export * from './change.ts';
export * from './form.ts';
export * from './history.ts';
export * from './input.ts';
export * from './loan.ts';
export * from './loan-store.ts';
export * from './person.ts';
export * from './person-store.ts';
export * from './request.ts';
export * from './werk.ts';
export * from './werk-store.ts';
