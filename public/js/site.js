// Who is looking, on pages whose bytes are the same for everyone: fills in the header's account
// menu from me.json and shows the controls marked data-may to those who may use them. Without
// JavaScript the controls stay hidden and the header offers "Log in" (docs/interface.md, Who is
// looking). The lend form's suggestions come from the search's JSON.
'use strict';

// <base href> makes "#main" the start page; the skip link names this address itself.
const skip = document.querySelector('a.skip');
if (skip) skip.href = location.pathname + location.search + '#main';

const account = document.querySelector('header.site .account');
if (account && !account.hasAttribute('data-known')) {
  fetch('me.json', { headers: { accept: 'application/json' } })
    .then((response) => (response.ok ? response.json() : null))
    .then((me) => me && me.angemeldet && showUser(me.angemeldet))
    .catch(() => {});
}

function showUser(user) {
  account.querySelector('[data-me=name]').textContent = user.name;
  account.querySelector('[data-me=loans]').href = user.entlehnte;
  const logout = account.querySelector('[data-me=logout]');
  if (user.csrf_token) {
    logout.elements.csrf_token.value = user.csrf_token;
    logout.hidden = false;
  }
  account.hidden = false;
  document.querySelector('header.site a.login').hidden = true;
  // data-may="librarian", or the path of the person whose account may use the control.
  for (const control of document.querySelectorAll('[data-may]')) {
    const may = control.getAttribute('data-may');
    const own = user.person !== null && new URL(may, document.baseURI).href === user.person;
    if (user.rolle === 'librarian' || own) control.hidden = false;
  }
}

// The lend form: the work's field suggests works by title or creator; a pick puts the work's URL in.
const werk = document.querySelector('input[data-suggest]');
if (werk) {
  const list = document.getElementById(werk.getAttribute('list'));
  let asked = '';
  werk.addEventListener('input', () => {
    const term = werk.value.trim();
    if (term.length < 2 || term === asked || /^(https?:|[0-9]+$)/.test(term)) return;
    asked = term;
    const url = `search.json?query=any,contains,${encodeURIComponent(term)}&search_scope=werke`;
    fetch(url, { headers: { accept: 'application/json' } })
      .then((response) => (response.ok ? response.json() : null))
      .then((result) => {
        if (!result || term !== asked) return;
        list.replaceChildren(...suggestionsOf(result).map(({ url, label }) => new Option(label, url)));
      })
      .catch(() => {});
  });
}

/** The works among a search result, as the URL to lend and "title, by creator". */
function suggestionsOf(result) {
  const hits = Array.isArray(result.treffer) ? result.treffer : [];
  return hits.filter((hit) => hit.typ === 'werk').map((hit) => ({ url: hit.url, label: `${hit.titel}, by ${hit.person.name}` }));
}
