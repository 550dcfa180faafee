import { describe, expect, it } from 'vitest';
import { SecretInEvidenceError } from '../../lib/errors.js';
import { parseEvidence } from '../../lib/recovery/evidence.js';
import { isSecretName } from '../../lib/recovery/secret-names.js';
import { compactName, normaliseForScan } from '../../lib/recovery/secret-normalisation.js';
import { MUST_PASS, MUST_REFUSE, randomAllowedEvidence } from './secret-corpus.js';

function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('evidence secret detector: the corpus', () => {
  it.each(MUST_REFUSE.map((c) => [c.name, c] as const))('refuses %s, as the kind its rule names, without echoing it', (_name, corpusCase) => {
    const error = thrown(() => parseEvidence(corpusCase.evidence, 'evidence'));
    expect(error).toBeInstanceOf(SecretInEvidenceError);
    expect((error as SecretInEvidenceError).kinds[0]).toBe(corpusCase.kind);
    expect(`${String(error)} ${JSON.stringify(error)}`).not.toContain(corpusCase.secret);
  });

  it.each(MUST_PASS.map((c) => [c.name, c] as const))('lets %s through unchanged', (_name, corpusCase) => {
    expect(parseEvidence(corpusCase.evidence, 'evidence')).toEqual(corpusCase.evidence);
  });

  it('random digests, ETags, UUIDs, object refs, numeric ids and timestamps always pass (500 draws)', () => {
    for (let draw = 0; draw < 500; draw += 1) {
      const evidence = randomAllowedEvidence();
      const error = thrown(() => parseEvidence(evidence, 'evidence'));
      expect(error, JSON.stringify(evidence)).toBeUndefined();
    }
  });
});

describe('evidence secret detector: what it reports', () => {
  it('a key split across array items is reported at the array, with the kind of the whole', () => {
    const error = thrown(() => parseEvidence({ ok: 'HTTP_200', parts: ['gh', 'p_', 'Ab3Cd4Ef5Gh6Jk7Mn8'] }, 'evidence')) as SecretInEvidenceError;
    expect(error.paths).toEqual(['evidence.parts']);
    expect(error.kinds).toEqual(['github_token']);
  });

  it('a wrapped secret is reported with the kind of what it wraps', () => {
    const wrapped = Buffer.from(Buffer.from('AKIAQWERTYUPASDFGHJK').toString('hex')).toString('base64');
    const error = thrown(() => parseEvidence({ blob: wrapped }, 'evidence')) as SecretInEvidenceError;
    expect(error.paths).toEqual(['evidence.blob']);
    expect(error.kinds).toEqual(['aws_access_key_id']);
  });

  it('unwrapping stops after two levels: a secret wrapped three times in hex is not dug out', () => {
    const thrice = [1, 2, 3].reduce((text) => Buffer.from(text).toString('hex'), 'password=x');
    expect(parseEvidence({ blob: thrice }, 'evidence')).toEqual({ blob: thrice });
  });

  it('a random token under a neutral name is refused as high_entropy_token; a labelled digest of the same alphabet passes', () => {
    const random = 'k7QxP2mZ9vB4nL8rT1wY6cH3jF5dS0gAq9';
    expect((thrown(() => parseEvidence({ value: random }, 'evidence')) as SecretInEvidenceError).kinds).toEqual(['high_entropy_token']);
    const sri = `sha256-${Buffer.alloc(32, 7).toString('base64').replace(/^.{8}/, 'k7QxP2mZ')}`;
    expect(parseEvidence({ integrity: sri }, 'evidence')).toEqual({ integrity: sri });
  });

  it('a digest label does not excuse a value of the wrong length', () => {
    const error = thrown(() => parseEvidence({ digest: 'sha256:k7QxP2mZ9vB4nL8rT1wY6cH3jF5dS0gAq9' }, 'evidence')) as SecretInEvidenceError;
    expect(error.kinds).toEqual(['high_entropy_token']);
  });
});

describe('evidence secret detector: names and normalisation', () => {
  it.each(['passWord', 'pass_word', 'pass-word', 'PASS WORD', 'раss.wоrd'])('%s compacts to password', (name) => {
    expect(compactName(name)).toBe('password');
  });

  it('zero-width characters, soft hyphens and BOMs vanish; full-width forms become ASCII; look-alikes fold to Latin', () => {
    expect(normaliseForScan('g\u200Bh\u200Cp\u200D_\u2060x\uFEFFy\u00ADz')).toBe('ghp_xyz');
    expect(normaliseForScan('ｐａｓｓ＝：－')).toBe('pass=:-');
    expect(normaliseForScan('АКІА ΡΑSS')).toBe('AKIA PASS');
  });

  it.each(['promptTokens', 'completion_tokens', 'totalTokenCount', 'prompt_tokens_details', 'maxTokens', 'author', 'shipping', 'footprint', 'spinner', 'keyRef', 'objectKey', 'wwwAuthenticate'])(
    'the neutral name %s is not a secret name',
    (name) => {
      expect(isSecretName(name)).toBe(false);
    },
  );

  it.each(['tokenizer', 'tokenSha256', 'sessionCount', 'secretRef', 'PIN', 'mfa_code', 'oauthToken', 'awsAccessKeyId'])(
    'the strict rule refuses %s too (store digests and references under neutral names)',
    (name) => {
      expect(isSecretName(name)).toBe(true);
    },
  );
});
