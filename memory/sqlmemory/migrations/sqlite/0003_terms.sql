-- The words of a memory are those of memory.Words, the rule every store
-- shares, not those of FTS5's unicode61 tokenizer (which removes
-- diacritics, so that "café" matched "cafe", and keeps superscripts and
-- fractions inside words). terms holds them, in order, joined by spaces,
-- and the full-text index, rebuilt here, indexes terms with the ascii
-- tokenizer: it splits at the spaces and changes nothing else, since the
-- words are lower-cased already. A row whose terms are not set (written
-- before this version, or by an older Loom) is indexed by its body until
-- Open fills its terms in; the update trigger then re-indexes it.
ALTER TABLE memories ADD COLUMN terms TEXT;
CREATE INDEX memories_unfilled ON memories (mid) WHERE terms IS NULL;

DROP TRIGGER memories_insert;
DROP TRIGGER memories_delete;
DROP TABLE memories_fts;
CREATE VIRTUAL TABLE memories_fts USING fts5(terms, content = 'memories', content_rowid = 'mid', tokenize = 'ascii');
INSERT INTO memories_fts (rowid, terms) SELECT mid, coalesce(terms, body) FROM memories;

CREATE TRIGGER memories_insert AFTER INSERT ON memories BEGIN
	INSERT INTO memories_fts (rowid, terms) VALUES (new.mid, coalesce(new.terms, new.body));
END;
CREATE TRIGGER memories_delete AFTER DELETE ON memories BEGIN
	INSERT INTO memories_fts (memories_fts, rowid, terms) VALUES ('delete', old.mid, coalesce(old.terms, old.body));
END;
CREATE TRIGGER memories_update AFTER UPDATE OF terms ON memories BEGIN
	INSERT INTO memories_fts (memories_fts, rowid, terms) VALUES ('delete', old.mid, coalesce(old.terms, old.body));
	INSERT INTO memories_fts (rowid, terms) VALUES (new.mid, coalesce(new.terms, new.body));
END;
