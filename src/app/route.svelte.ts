/**
 * The view the URL names, kept in step with it: following a link to `#/machines`, the
 * back and forward buttons, and a typed URL all change `route.view`.
 */
import { viewOf, type ViewId } from './views.ts';

class Route {
  view: ViewId = $state(viewOf(location.hash));

  constructor() {
    addEventListener('hashchange', () => {
      this.view = viewOf(location.hash);
    });
  }
}

export const route = new Route();
