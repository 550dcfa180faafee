import { describe, expect, it } from 'vitest';
import { ConfigError, DurableOpsError } from '../../lib/errors.js';
import { parseModelRoute } from '../../lib/models/lambda-chat-provider.js';
import { failureForStatus, isRetryableModelFailure, MODEL_FAILURES, ModelCallError, transportErrorCode } from '../../lib/models/model-errors.js';

describe('model call errors', () => {
  it('transient failures are retryable; refusals, bad output, oversize answers and caller aborts are not', () => {
    const retryable = MODEL_FAILURES.filter((failure) => isRetryableModelFailure(failure));
    expect(retryable.sort()).toEqual(['connection', 'function_error', 'invalid_response', 'rate_limited', 'server_error', 'timeout']);
    for (const failure of MODEL_FAILURES) expect(new ModelCallError(failure).retryable).toBe(isRetryableModelFailure(failure));
  });

  it('every failure has a fixed short message, the stable code model_call_failed and no cause', () => {
    for (const failure of MODEL_FAILURES) {
      const error = new ModelCallError(failure, { httpStatus: 503 });
      expect(error).toBeInstanceOf(DurableOpsError);
      expect(error.code).toBe('model_call_failed');
      expect(error.name).toBe('ModelCallError');
      expect(error.message.length).toBeLessThanOrEqual(100);
      expect(error.cause).toBeUndefined();
    }
  });

  it('statuses map to rate_limited (429), server_error (5xx) and rejected (anything else)', () => {
    expect(failureForStatus(429)).toBe('rate_limited');
    expect(failureForStatus(500)).toBe('server_error');
    expect(failureForStatus(599)).toBe('server_error');
    expect(failureForStatus(400)).toBe('rejected');
    expect(failureForStatus(302)).toBe('rejected');
  });

  it('a provider code is reduced to [A-Za-z0-9_.] and 64 characters', () => {
    expect(new ModelCallError('connection', { providerCode: 'E CONN"<REFUSED>' }).providerCode).toBe('ECONNREFUSED');
    expect(new ModelCallError('connection', { providerCode: 'x'.repeat(100) }).providerCode).toHaveLength(64);
    expect(new ModelCallError('connection', { providerCode: '!!!' }).providerCode).toBeNull();
  });

  it("a transport error's code comes from its cause, its code or its name — never its message", () => {
    expect(transportErrorCode(Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('x'), { code: 'ECONNRESET' }) }))).toBe('ECONNRESET');
    expect(transportErrorCode(Object.assign(new Error('secret text'), { code: 'ETIMEDOUT' }))).toBe('ETIMEDOUT');
    expect(transportErrorCode(new RangeError('secret text'))).toBe('RangeError');
    expect(transportErrorCode('secret text')).toBeUndefined();
  });
});

describe('model route settings', () => {
  it('lambda:<name> and lambda:<function ARN> are Lambda routes', () => {
    expect(parseModelRoute('lambda:model-sidecar_1')).toEqual({ kind: 'lambda', functionName: 'model-sidecar_1' });
    const arn = 'arn:aws:lambda:eu-west-1:123456789012:function:model-sidecar:live';
    expect(parseModelRoute(`lambda:${arn}`)).toEqual({ kind: 'lambda', functionName: arn });
  });

  it('an http(s) URL is an HTTP route without trailing slashes', () => {
    expect(parseModelRoute('http://127.0.0.1:8080/v1/')).toEqual({ kind: 'http', baseUrl: 'http://127.0.0.1:8080/v1' });
    expect(parseModelRoute('https://api.example.com/v1')).toEqual({ kind: 'http', baseUrl: 'https://api.example.com/v1' });
  });

  it('an empty lambda: route is a ConfigError', () => {
    expect(() => parseModelRoute('lambda:', 'MODEL_LOCAL_URL')).toThrow(ConfigError);
  });

  it.each([
    'lambda:has space',
    `lambda:${'f'.repeat(65)}`,
    'lambda:arn:aws:s3:::bucket',
    'ftp://models.test',
    'models.test/v1',
    'https://user:s3cr3t-token@models.test/v1',
  ])('%s is a ConfigError naming the variable, not the value', (value) => {
    let thrown: unknown;
    try {
      parseModelRoute(value, 'MODEL_LOCAL_URL');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    const message = (thrown as Error).message;
    expect(message).toContain('MODEL_LOCAL_URL');
    expect(message).not.toContain(value);
    expect(message).not.toContain('s3cr3t');
  });
});
