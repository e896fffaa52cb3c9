// settings.json in the data bucket, read and validated as the functions read it: a file that does
// not parse, or a value out of bounds, means the defaults (and for `access`, nobody) apply.
import { ROOT_KEYS } from '../../shared/ids.ts';
import { loadSettings } from '../../shared/settings/load.ts';
import { settingsSchema, type Settings } from '../../shared/settings/schema.ts';
import type { DoctorDeps } from './deps.ts';
import { errorText, ok, problem, type CheckResult } from './result.ts';

export async function settingsFile(deps: DoctorDeps, bucket: string): Promise<{ result: CheckResult; settings: Settings }> {
  const name = 'settings.json';
  const where = `s3://${bucket}/${ROOT_KEYS.settings}`;
  try {
    const loaded = await loadSettings({ s3: deps.s3, bucket });
    if (loaded.problems.length === 0)
      return { result: ok(name, `${where} is valid (or absent: the defaults apply)`), settings: loaded.settings };
    return {
      result: problem(
        name,
        loaded.problems.join('; '),
        `Fix ${where} (docs/settings.md): aws s3 cp ${where} settings.json, edit, aws s3 cp settings.json ${where}.`,
      ),
      settings: loaded.settings,
    };
  } catch (error) {
    return {
      result: problem(
        name,
        `${where} could not be read: ${errorText(error)}`,
        `The credentials need s3:GetObject on ${where} (and s3:ListBucket on the bucket).`,
      ),
      settings: settingsSchema.parse({}) as Settings,
    };
  }
}
