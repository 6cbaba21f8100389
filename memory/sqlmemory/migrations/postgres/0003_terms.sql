-- The words of a memory are those of memory.Words, the rule every store
-- shares, not those of PostgreSQL's parser (which keeps e-mail addresses,
-- URLs, paths and decimals as single tokens). terms holds them, in order,
-- joined by spaces, and the tsvector is made from terms. A row whose terms
-- are not set (written before this version, or by an older Loom) is
-- indexed by its body as before until Open fills its terms in.
ALTER TABLE memories ADD COLUMN terms TEXT;
ALTER TABLE memories DROP COLUMN words;
ALTER TABLE memories ADD COLUMN words TSVECTOR
	GENERATED ALWAYS AS (to_tsvector('simple', coalesce(terms, body))) STORED;
CREATE INDEX memories_words ON memories USING GIN (words);
CREATE INDEX memories_unfilled ON memories (mid) WHERE terms IS NULL;
