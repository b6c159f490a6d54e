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

// The lend form: the work's field suggests works by title or creator, from the same search step
// the page offers without JavaScript (its "Title or creator" form); a pick puts the work's URL in,
// and a work on loan says so in its label.
const werk = document.querySelector('input[data-suggest]');
const find = document.querySelector('form.find');
if (werk && find) {
  const list = document.getElementById(werk.getAttribute('list'));
  let asked = '';
  let pause = 0;
  werk.addEventListener('input', () => {
    clearTimeout(pause);
    pause = setTimeout(suggest, 150);
  });
  function suggest() {
    const term = werk.value.trim();
    if (term.length < 2 || term === asked || /^(https?:|[0-9]+$)/.test(term)) return;
    asked = term;
    const url = new URL(find.action);
    url.searchParams.set('suche', term);
    fetch(url, { headers: { accept: 'text/html' } })
      .then((response) => (response.ok ? response.text() : null))
      .then((html) => {
        if (html === null || term !== asked) return;
        const step = new DOMParser().parseFromString(html, 'text/html');
        list.replaceChildren(...suggestionsOf(step).map(({ url, label }) => new Option(label, url)));
      })
      .catch(() => {});
  }
}

/** The works the search step lists, as the URL to lend and "title, by creator", with the loan if any. */
function suggestionsOf(step) {
  return [...step.querySelectorAll('ul.candidates li')].map((item) => {
    const link = item.querySelector('a');
    const titel = link.textContent;
    const person = item.querySelector('span').textContent.slice(titel.length).replace(/^\s*by\s*/, '');
    const onLoan = item.querySelector('.onloan');
    const loan = onLoan ? ` (${onLoan.textContent.replace(/^On loan/, 'on loan')})` : '';
    return { url: new URL(link.getAttribute('href'), document.baseURI).href, label: `${titel}, by ${person}${loan}` };
  });
}
