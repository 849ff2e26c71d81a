DROP TABLE blob_chunks;
DROP TABLE blobs;
