// The lib modules a handler script may import, by file name. The script loader hands a script
// these very instances (lib/scripts.ts), under tsx as in the bundle dist/server.js, where lib
// files are no modules of their own: `instanceof HttpError` holds and no second copy is loaded.
import * as accounts from './accounts.ts';
import * as auth from './auth.ts';
import * as change from './change.ts';
import * as db from './db.ts';
import * as formPage from './form-page.ts';
import * as history from './history.ts';
import * as httpError from './http-error.ts';
import * as loanInput from './loan-input.ts';
import * as loanStore from './loan-store.ts';
import * as loanView from './loan-view.ts';
import * as personForms from './person-forms.ts';
import * as personInput from './person-input.ts';
import * as personKey from './person-key.ts';
import * as personStore from './person-store.ts';
import * as personView from './person-view.ts';
import * as script from './script.ts';
import * as werkForms from './werk-forms.ts';
import * as werkInput from './werk-input.ts';
import * as werkStore from './werk-store.ts';
import * as werkView from './werk-view.ts';

export const scriptModules: Readonly<Record<string, unknown>> = {
  'accounts.ts': accounts,
  'auth.ts': auth,
  'change.ts': change,
  'db.ts': db,
  'form-page.ts': formPage,
  'history.ts': history,
  'http-error.ts': httpError,
  'loan-input.ts': loanInput,
  'loan-store.ts': loanStore,
  'loan-view.ts': loanView,
  'person-forms.ts': personForms,
  'person-input.ts': personInput,
  'person-key.ts': personKey,
  'person-store.ts': personStore,
  'person-view.ts': personView,
  'script.ts': script,
  'werk-forms.ts': werkForms,
  'werk-input.ts': werkInput,
  'werk-store.ts': werkStore,
  'werk-view.ts': werkView,
};
