// The page room: the one module a handler script in scripts/ may import (the loader hands every
// script this very instance): what a script receives and returns, the nouns person, werk and loan
// with their stores, forms, the rules of changing data, and the search list's URL and representations.
// May import: auth, db, http, search.
export type { Account, Identity } from '../auth/index.ts';
export { findAccount } from '../auth/index.ts';
export type { Db, Queryable } from '../db/index.ts';
export type { FieldError, Format } from '../http/index.ts';
export { clip, controlCharacters, HttpError, NoContent, Redirect, Verbatim } from '../http/index.ts';
export { allKey, personKey, personsKey, touched, werkKey, worksKey } from './cache-keys.ts';
export { admitChange, change, changeWithUpload, librariansOnly, mayChangePerson, notYours } from './change.ts';
export type { Failure, FormField, FormPage } from './form.ts';
export { formAgain, formDocument, freshForm, showForm } from './form.ts';
export type { RawFields } from './input.ts';
export { rejectInvalid } from './input.ts';
export type { LendCandidate, Loan } from './loan.ts';
export {
  findLoan,
  findOpenLoans,
  findWorksToLend,
  loanFields,
  loanJson,
  loanView,
  loanXml,
  mayReadLoans,
  readLoan,
} from './loan.ts';
export { giveBack, lend } from './loan-store.ts';
export type { Person, PersonKey } from './person.ts';
export {
  editPersonPage,
  findPerson,
  keyPath,
  newPersonPage,
  personJson,
  personValues,
  personView,
  personXml,
  readPerson,
  readPersonKey,
  resolvePerson,
} from './person.ts';
export { deletePerson, insertPerson, setPersonImage, updatePerson } from './person-store.ts';
export type { PictureOptions } from './picture.ts';
export { pictureIn, pictureName, pictureSource, pictureWidths, storePicture } from './picture.ts';
export { PictureQueue } from './picture-queue.ts';
export type { Document, LinkFn, Outcome, Paging, ScriptModule, ScriptRequest, View } from './script-request.ts';
export {
  buildQuery,
  loginLink,
  pageLinks,
  pagingOf,
  readId,
  readNonNegativeInteger,
  requireLogin,
} from './script-request.ts';
export type { FacetView, SearchResult } from './search-list.ts';
export { searchJson, searchView, searchXml } from './search-list.ts';
export type { SearchSettings } from './search-url.ts';
export {
  checkSearchPath,
  conditionsFromForm,
  readSearchSettings,
  searchPath,
  searchPathFrom,
  searchPathStart,
  searchViews,
} from './search-url.ts';
export type { Werk } from './werk.ts';
export {
  editWerkPage,
  findWerk,
  newWerkPage,
  readWerk,
  resolveWerk,
  werkJson,
  werkValues,
  werkView,
  werkXml,
} from './werk.ts';
export { deleteWerk, insertWerk, updateWerk } from './werk-store.ts';
export * as search from '../search/index.ts';
export type { ApiFragment, ApiParts, ApiResource, SiteScript } from './api-description.ts';
export { apiParts, describeSite, siteScripts } from './api-description.ts';
