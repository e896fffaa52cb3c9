// S3 (REST): the operation is the method, whether the path names a bucket or an object, and the
// query's subresource (?tagging, ?versions, ?delete…). Path-style (/bucket/key, as the local
// clients send with forcePathStyle) and virtual-hosted style (bucket.s3….host/key) are both read.
import { LOCAL_PARTITION } from '../template.ts';
import { type Authorization, type AwsHttpRequest, UnknownOperationError, header, parseUrl } from './request-types.ts';
import { onAnyResource } from './service-reference.ts';

type Level = 'object' | 'bucket';
type Rule = { action: string; versioned?: string };

// Query parameters that are options of an operation, not a subresource that selects another one.
const OPTIONS = new Set([
  'x-id',
  'versionId',
  'partNumber',
  'list-type',
  'prefix',
  'delimiter',
  'max-keys',
  'continuation-token',
  'start-after',
  'fetch-owner',
  'encoding-type',
  'marker',
  'key-marker',
  'version-id-marker',
  'upload-id-marker',
  'max-uploads',
  'max-parts',
  'part-number-marker',
  'optional-object-attributes',
]);

// method → subresource ('' for none) → action, by level. A versioned request (?versionId) has its own action.
const RULES: Record<Level, Record<string, Record<string, Rule>>> = {
  object: {
    GET: {
      '': { action: 'GetObject', versioned: 'GetObjectVersion' },
      tagging: { action: 'GetObjectTagging', versioned: 'GetObjectVersionTagging' },
      acl: { action: 'GetObjectAcl', versioned: 'GetObjectVersionAcl' },
      attributes: { action: 'GetObjectAttributes', versioned: 'GetObjectVersionAttributes' },
      uploadId: { action: 'ListMultipartUploadParts' },
    },
    PUT: {
      '': { action: 'PutObject' },
      uploadId: { action: 'PutObject' },
      tagging: { action: 'PutObjectTagging', versioned: 'PutObjectVersionTagging' },
      acl: { action: 'PutObjectAcl', versioned: 'PutObjectVersionAcl' },
    },
    POST: { uploads: { action: 'PutObject' }, uploadId: { action: 'PutObject' }, restore: { action: 'RestoreObject' } },
    DELETE: {
      '': { action: 'DeleteObject', versioned: 'DeleteObjectVersion' },
      uploadId: { action: 'AbortMultipartUpload' },
      tagging: { action: 'DeleteObjectTagging', versioned: 'DeleteObjectVersionTagging' },
    },
  },
  bucket: {
    GET: {
      '': { action: 'ListBucket' },
      versions: { action: 'ListBucketVersions' },
      uploads: { action: 'ListBucketMultipartUploads' },
      location: { action: 'GetBucketLocation' },
      notification: { action: 'GetBucketNotification' },
      tagging: { action: 'GetBucketTagging' },
      policy: { action: 'GetBucketPolicy' },
      versioning: { action: 'GetBucketVersioning' },
      cors: { action: 'GetBucketCORS' },
      acl: { action: 'GetBucketAcl' },
      encryption: { action: 'GetEncryptionConfiguration' },
      lifecycle: { action: 'GetLifecycleConfiguration' },
      publicAccessBlock: { action: 'GetBucketPublicAccessBlock' },
      ownershipControls: { action: 'GetBucketOwnershipControls' },
      logging: { action: 'GetBucketLogging' },
    },
    // HeadBucket is authorized as s3:ListBucket.
    HEAD: { '': { action: 'ListBucket' } },
    PUT: {
      '': { action: 'CreateBucket' },
      notification: { action: 'PutBucketNotification' },
      tagging: { action: 'PutBucketTagging' },
      policy: { action: 'PutBucketPolicy' },
      versioning: { action: 'PutBucketVersioning' },
      cors: { action: 'PutBucketCORS' },
      acl: { action: 'PutBucketAcl' },
      encryption: { action: 'PutEncryptionConfiguration' },
      lifecycle: { action: 'PutLifecycleConfiguration' },
      publicAccessBlock: { action: 'PutBucketPublicAccessBlock' },
      ownershipControls: { action: 'PutBucketOwnershipControls' },
      logging: { action: 'PutBucketLogging' },
    },
    // Deleting a bucket configuration is authorized as putting it, except for these three.
    DELETE: {
      '': { action: 'DeleteBucket' },
      policy: { action: 'DeleteBucketPolicy' },
      tagging: { action: 'PutBucketTagging' },
      cors: { action: 'PutBucketCORS' },
      encryption: { action: 'PutEncryptionConfiguration' },
      lifecycle: { action: 'PutLifecycleConfiguration' },
      publicAccessBlock: { action: 'PutBucketPublicAccessBlock' },
      ownershipControls: { action: 'PutBucketOwnershipControls' },
    },
  },
};

export function bucketArn(bucket: string): string {
  return `arn:${LOCAL_PARTITION}:s3:::${bucket}`;
}

function objectArn(bucket: string, key: string): string {
  return `${bucketArn(bucket)}/${key}`;
}

// Virtual-hosted style puts the bucket before "s3." (or before "localhost" locally).
function bucketAndKey(request: AwsHttpRequest, url: URL): { bucket?: string; key: string } {
  const host = (header(request, 'host') ?? url.host).replace(/:\d+$/, '');
  const virtual = /^(.+?)\.s3[.-]/.exec(host) ?? /^(.+)\.localhost$/.exec(host);
  const path = url.pathname.replace(/^\//, '');
  if (virtual?.[1]) return { bucket: virtual[1], key: decodeURIComponent(path) };
  const slash = path.indexOf('/');
  if (path === '') return { key: '' };
  if (slash < 0) return { bucket: decodeURIComponent(path), key: '' };
  return { bucket: decodeURIComponent(path.slice(0, slash)), key: decodeURIComponent(path.slice(slash + 1)) };
}

/** x-amz-copy-source: "bucket/key" (URL-encoded, maybe with a leading "/" and "?versionId="). */
function copySource(value: string): Authorization {
  const [path = '', query = ''] = value.replace(/^\//, '').split('?');
  const decoded = decodeURIComponent(path);
  const slash = decoded.indexOf('/');
  const versioned = new URLSearchParams(query).has('versionId');
  return {
    action: versioned ? 's3:GetObjectVersion' : 's3:GetObject',
    resource: objectArn(decoded.slice(0, slash), decoded.slice(slash + 1)),
  };
}

// DeleteObjects: <Delete><Object><Key>k</Key><VersionId>v</VersionId></Object>…</Delete>.
function deletedObjects(bucket: string, body: Buffer): Authorization[] {
  const unescape = (text: string) =>
    text.replace(/&(lt|gt|quot|apos|amp);/g, (_m, name: string) => ({ lt: '<', gt: '>', quot: '"', apos: "'", amp: '&' })[name] ?? '');
  return [...body.toString('utf8').matchAll(/<Object>([\s\S]*?)<\/Object>/g)].map(([, object = '']) => {
    const key = unescape(/<Key>([\s\S]*?)<\/Key>/.exec(object)?.[1] ?? '');
    const versioned = /<VersionId>/.test(object);
    return { action: versioned ? 's3:DeleteObjectVersion' : 's3:DeleteObject', resource: objectArn(bucket, key) };
  });
}

function listContext(query: URLSearchParams): Record<string, string> {
  const context: Record<string, string> = {};
  for (const [param, key] of [
    ['prefix', 's3:prefix'],
    ['delimiter', 's3:delimiter'],
    ['max-keys', 's3:max-keys'],
  ] as const) {
    const value = query.get(param);
    if (value !== null) context[key] = value;
  }
  return context;
}

export function s3Authorizations(request: AwsHttpRequest): Authorization[] {
  const url = parseUrl(request);
  const method = request.method.toUpperCase();
  const { bucket, key } = bucketAndKey(request, url);
  const subresources = [...url.searchParams.keys()].filter((name) => !OPTIONS.has(name));
  // A multipart upload's requests carry ?uploadId (and nothing else); any other request one subresource at most.
  const others = subresources.filter((name) => name !== 'uploadId');
  const subresource = subresources.includes('uploadId') ? 'uploadId' : (others[0] ?? '');
  const operation = `${method} ${bucket === undefined ? 'service' : key ? 'object' : 'bucket'}${subresources.map((name) => ` ?${name}`).join('')}`;
  if (others.length > (subresource === 'uploadId' ? 0 : 1)) throw new UnknownOperationError('s3', operation);
  if (bucket === undefined) {
    // ListBuckets is s3:ListAllMyBuckets, which the reference authorizes against "*" only.
    const any = method === 'GET' && subresources.length === 0 ? onAnyResource('s3', 'ListAllMyBuckets') : undefined;
    if (any) return [any];
    throw new UnknownOperationError('s3', operation);
  }
  if (key === '' && method === 'POST' && subresource === 'delete') return deletedObjects(bucket, request.body);
  const level: Level = key ? 'object' : 'bucket';
  // HEAD of an object is GetObject's.
  const rule = RULES[level][level === 'object' && method === 'HEAD' ? 'GET' : method]?.[subresource];
  if (!rule) throw new UnknownOperationError('s3', operation);
  const versioned = url.searchParams.has('versionId') && rule.versioned;
  const action = `s3:${versioned ? rule.versioned : rule.action}`;
  if (level === 'bucket') {
    const context = rule.action === 'ListBucket' ? listContext(url.searchParams) : {};
    return [{ action, resource: bucketArn(bucket), ...(Object.keys(context).length > 0 ? { context } : {}) }];
  }
  const authorizations: Authorization[] = [{ action, resource: objectArn(bucket, key) }];
  const source = header(request, 'x-amz-copy-source');
  if (method === 'PUT' && source) authorizations.push(copySource(source));
  // Tags and ACLs given with the object need their own permission.
  const writesObject = rule.action === 'PutObject' && subresource !== 'uploadId';
  if (writesObject && header(request, 'x-amz-tagging'))
    authorizations.push({ action: 's3:PutObjectTagging', resource: objectArn(bucket, key) });
  if (writesObject && Object.keys(request.headers).some((name) => /^x-amz-(acl|grant-)/i.test(name))) {
    authorizations.push({ action: 's3:PutObjectAcl', resource: objectArn(bucket, key) });
  }
  return authorizations;
}
