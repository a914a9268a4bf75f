// Talking to the meshlens API: the token from the login form (kept in this tab's
// sessionStorage), `{code, message}` errors, and the login form whenever a 401 comes back.

export const webRoot = document.querySelector('meta[name="web-root"]').content;
export const consoleRoot = webRoot + 'console/';
const TOKEN_KEY = 'meshlens.token';

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

let onLogin = () => {};
/** What to do after a successful login (re-render the current view). */
export function setLoginHandler(fn) { onLogin = fn; }

function headers(extra = {}) {
  // X-Requested-With keeps the server from offering Basic, so the browser shows no auth prompt.
  const h = { Accept: 'application/json', 'X-Requested-With': 'XMLHttpRequest', ...extra };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token && !h.Authorization) h.Authorization = 'Bearer ' + token;
  return h;
}

async function failure(resp) {
  let message = resp.statusText || 'request failed';
  try {
    const body = await resp.json();
    if (body && body.message) message = body.message;
  } catch { /* not JSON */ }
  return new ApiError(resp.status, message);
}

/** GET `api/<path>`; resolves to the parsed JSON (or text for `as: 'text'`). */
export async function api(path, { signal, as = 'json' } = {}) {
  const resp = await fetch(webRoot + 'api/' + path, { headers: headers(), signal });
  if (resp.status === 401) {
    const err = await failure(resp);
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin(err.message);
    throw err;
  }
  if (!resp.ok) throw await failure(resp);
  if (resp.status === 204) return null;
  return as === 'text' ? resp.text() : resp.json();
}

/** The full URL of an API path (for downloads and links). */
export function apiUrl(path) { return webRoot + 'api/' + path; }

export function showLogin(message) {
  const dlg = document.getElementById('login');
  const err = document.getElementById('login-error');
  err.textContent = message && message !== 'missing credentials: send a Bearer token or HTTP Basic user and password' ? message : '';
  document.body.dataset.auth = 'required';
  if (!dlg.open) dlg.showModal();
}

function basic(user, pass) {
  const bytes = new TextEncoder().encode(user + ':' + pass);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return 'Basic ' + btoa(bin);
}

export function initLogin() {
  const dlg = document.getElementById('login');
  const form = document.getElementById('login-form');
  const err = document.getElementById('login-error');
  const logout = document.getElementById('logout');
  logout.hidden = !sessionStorage.getItem(TOKEN_KEY);
  // The form is the only way forward while it is open.
  dlg.addEventListener('cancel', (e) => e.preventDefault());
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const user = form.elements.username.value;
    const pass = form.elements.password.value;
    err.textContent = '';
    let resp;
    try {
      resp = await fetch(webRoot + 'api/token', { headers: headers({ Authorization: basic(user, pass) }) });
    } catch (ex) {
      err.textContent = 'cannot reach meshlens: ' + ex.message;
      return;
    }
    if (!resp.ok) {
      err.textContent = (await failure(resp)).message;
      form.elements.password.value = '';
      return;
    }
    const body = await resp.json();
    sessionStorage.setItem(TOKEN_KEY, body.token);
    form.elements.password.value = '';
    document.body.dataset.auth = 'ok';
    logout.hidden = false;
    dlg.close();
    onLogin();
  });
  logout.addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    logout.hidden = true;
    showLogin('');
  });
}
export { enc } from './dom.js';
