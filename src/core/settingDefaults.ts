// Defaults of the `coaStudio.*` editor settings, read from the one table that declares them: package.json's
// contributes.configuration (the manifest VS Code itself reads). The extension's typed reader and the language
// server's parser take their fallbacks from here, so a default is changed in one place.
import { contributes } from '../../package.json';

type Properties = typeof contributes.configuration.properties;
/** Setting name without the `coaStudio.` prefix (`otc.c`, `training.openLivePanel` …). */
export type SettingName = keyof Properties extends `coaStudio.${infer K}` ? K : never;

export const SETTING_PREFIX = 'coaStudio.';

export function settingDefault<K extends SettingName>(name: K): Properties[`coaStudio.${K}`]['default'] {
  return contributes.configuration.properties[`${SETTING_PREFIX}${name}` as `coaStudio.${K}`].default;
}
