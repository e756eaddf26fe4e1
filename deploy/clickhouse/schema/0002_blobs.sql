-- MindRouter audit: large payloads taken out of request and response
-- content (core/audit.Blob). A base64 image (a data: URL, Anthropic's
-- base64 source, Ollama's images[]) of at least 1 KiB (Options.
-- BlobMinBytes) becomes, in requests.request_body / response_body, a
-- reference
--   mr-blob:sha256:<64 hex>;type=<media type>;size=<bytes>
-- and its decoded bytes are stored here once, keyed by their SHA-256.
-- A reference ending in ";not-stored" was over the bounds (per blob, per
-- request): only its hash, type and size are known.
--
-- Resolving a reference:
--   SELECT media_type, size, data FROM mindrouter.blobs FINAL
--   WHERE sha256 = '<hex>'
--
-- Not partitioned: the hash is the whole key, and ReplacingMergeTree
-- collapses rows with equal keys only within a partition. time and
-- request_id are those of one request that carried the payload (the
-- writer skips hashes already stored, so normally the first). The writer
-- stores a request's blobs before its row: a stored row's blobs are
-- there. Retention: delete the blobs no kept row refers to (see
-- docs/audit.md).
CREATE TABLE IF NOT EXISTS mindrouter.blobs (
    sha256     String,
    media_type String,
    size       UInt64,
    data       String,
    time       DateTime64(6, 'UTC'),
    request_id String
) ENGINE = ReplacingMergeTree()
ORDER BY sha256;
