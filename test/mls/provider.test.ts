/** Runs the MlsProvider acceptance suite against every provider we ship (today: ts-mls). */
import { TsMlsProvider } from '../../src/runtime/mls/ts-mls-provider.js';
import { mlsProviderSuite } from '../helpers/mls-provider-suite.js';

mlsProviderSuite('ts-mls', (authenticate) =>
  TsMlsProvider.create(async (identity, key) => {
    const { leafAuthenticator } = await import('../../src/core/mls/leaf-binding.js');
    return leafAuthenticator(authenticate)(identity, key);
  }),
);
