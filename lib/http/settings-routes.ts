import { getOwnSettings, OwnerSettingsDtoSchema, OwnerSettingsPatchSchema, updateOwnSettings } from '../owners/owner-settings.js';
import { parseJsonObjectBody } from './json-body.js';
import { jsonResponse } from './json-response.js';
import type { OwnerRoute } from './route-types.js';

/**
 * The owner's own settings (docs/design.md §7), each route with its OpenAPI description:
 *
 * - `GET /api/me/settings` — 200 `{plan, aiEnabled, privacyMode}` (defaults for an owner who never changed them).
 * - `PATCH /api/me/settings` — body `{aiEnabled?, privacyMode?}`, at least one; 200 the new settings. The plan is an
 *   entitlement only an operator changes (`npm run owner`), so a body naming it is a 400 like any other unknown key.
 */
export const SETTINGS_ROUTES: readonly OwnerRoute[] = [
  {
    access: 'owner',
    method: 'GET',
    path: '/api/me/settings',
    doc: {
      operationId: 'getSettings',
      tag: 'settings',
      summary: 'Read the owner’s settings',
      description: 'The plan (an entitlement), whether AI work is enabled and the privacy mode; an owner who never changed them gets the defaults.',
      success: { 200: { description: 'The settings (defaults for an owner who never changed them).', schema: OwnerSettingsDtoSchema } },
      problems: {},
    },
    async handle(scope) {
      return jsonResponse(200, OwnerSettingsDtoSchema, await getOwnSettings(scope));
    },
  },
  {
    access: 'owner',
    method: 'PATCH',
    path: '/api/me/settings',
    doc: {
      operationId: 'updateSettings',
      tag: 'settings',
      summary: 'Change the owner’s settings',
      description: 'The plan is an entitlement only an operator changes: a body naming it is a 400, like any other unknown key.',
      body: { schema: OwnerSettingsPatchSchema, description: '`aiEnabled` and/or `privacyMode`, at least one.' },
      success: { 200: { description: 'The new settings.', schema: OwnerSettingsDtoSchema } },
      problems: { 400: 'Anything but `{aiEnabled?, privacyMode?}` with at least one of them.' },
    },
    async handle(scope, _deps, event) {
      return jsonResponse(200, OwnerSettingsDtoSchema, await updateOwnSettings(scope, parseJsonObjectBody(event)));
    },
  },
];
