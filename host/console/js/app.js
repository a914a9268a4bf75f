// The console's router: one view per path under {web_root}console/, state in the query string
// (the API's own parameter names), history navigation without page loads.

import { consoleRoot, initLogin, setLoginHandler, ApiError } from './api.js';
import { renderOverview } from './overview.js';
import { renderGraph } from './graph.js';
import { renderApp, renderWorkload } from './details.js';
import { renderMesh, renderMeshObject } from './mesh.js';
import { el } from './dom.js';
import { renderApps, renderWorkloads, renderServices, renderIstio } from './lists.js';
import { renderService } from './service.js';

const views = {
  '': renderOverview,
  graph: renderGraph,
  app: renderApp,
  workload: renderWorkload,
  mesh: renderMesh,
  'mesh/object': renderMeshObject,
  apps: renderApps,
  workloads: renderWorkloads,
  services: renderServices,
  istio: renderIstio,
  service: renderService,
};

let cleanup = null;

function currentView() {
  let path = decodeURIComponent(location.pathname);
  path = path.startsWith(consoleRoot) ? path.slice(consoleRoot.length) : '';
  return path.replace(/\/+$/, '');
}

async function render() {
  if (cleanup) { try { cleanup(); } catch { /* view already gone */ } cleanup = null; }
  const main = document.getElementById('view');
  main.replaceChildren();
  const name = currentView();
  const view = views[name];
  document.querySelectorAll('header nav a').forEach((a) => {
    a.classList.toggle('active', a.getAttribute('href') === (name.split('/')[0] || './'));
  });
  if (!view) {
    main.append(el('p', { class: 'error', 'data-testid': 'not-found' }, `No console page named “${name}”.`));
    return;
  }
  try {
    cleanup = (await view(main, new URLSearchParams(location.search))) || null;
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return; // the login form is up
    main.append(el('p', { class: 'error', 'data-testid': 'view-error' }, String(e.message || e)));
  }
}

/** Goes to a console path (relative to the console root) without reloading. */
export function navigate(href, { replace = false } = {}) {
  const url = new URL(href, document.baseURI);
  if (replace) history.replaceState(null, '', url); else history.pushState(null, '', url);
  render();
}

document.addEventListener('click', (e) => {
  const a = e.target.closest && e.target.closest('a[data-link]');
  if (!a || e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
  e.preventDefault();
  navigate(a.getAttribute('href'));
});
window.addEventListener('popstate', render);
initLogin();
setLoginHandler(render);
render();
