// The HTTP room: the hardened node:http server and its process model, the request target, the
// choice of representation, request bodies, the one HttpError, writing responses, files of public/
// and the proxy to a legacy upstream.
// May import: log.
export type { Body, BodyReader, BodyType } from './body.ts';
export { bodyTypeOf, createBodyReader, hasBody, noBody, refuseLargeBody } from './body.ts';
export { askPrimary, isStopping, listen, onCollect, runsWorkers } from './cluster.ts';
export type { PrimaryOptions } from './primary.ts';
export { runPrimary } from './primary.ts';
export type { Answer } from './process-model.ts';
export type { FieldError } from './http-error.ts';
export { clip, controlCharacters, HttpError, NoContent, Redirect, Verbatim } from './http-error.ts';
export type { LinkRelation } from './header-budget.ts';
export { linkHeader, locationHeader } from './header-budget.ts';
export { effectiveMethod, possibleMethods } from './method-override.ts';
export { readQuery } from './query.ts';
export type { Alternate, Format } from './negotiate.ts';
export { alternatesOf, chooseFormat, formats, mediaTypes, negotiateErrorFormat } from './negotiate.ts';
export { createProxy, UpstreamError } from './proxy.ts';
export { refererPath, refuseCrossSite } from './cross-site.ts';
export type { Exchange, Viewer } from './respond.ts';
export {
  accessEntryOf,
  clientGone,
  createExchange,
  etagOf,
  matchesEtag,
  notModifiedHeaders,
  sendBody,
  sendEmpty,
} from './respond.ts';
export type { ServerLimits } from './server.ts';
export { createHttpServer, lingerAfterAnswer } from './server.ts';
export type { Upload, UploadedFile, UploadOptions } from './upload.ts';
export { rawUploadTypes, readUpload } from './upload.ts';
export type { Mount } from './static.ts';
export { picturesPath, StaticFiles } from './static.ts';
export type { Encoding } from './compress.ts';
export { chooseEncoding, compressBody, encodedEtag, isCompressible, minCompressBytes } from './compress.ts';
export type { Target } from './target.ts';
export { basePathOf, locate, readTarget } from './target.ts';
export type { Client, Trust } from './forwarded.ts';
export { addressGroup, compileTrust } from './forwarded.ts';
export type { XmlElement } from './xml-body.ts';
export { Purger } from './purge.ts';
