#!/usr/bin/env python3
"""Writes wn30_synset.lemmas.tsv.gz: every lemma of every WordNet 3.0 synset.

Input: the data.{noun,verb,adj,adv} files of Debian's `wordnet-base` package (WordNet 3.0), e.g.
    apt-get download wordnet-base && dpkg-deb -x wordnet-base_*.deb wn
    python3 wordnet_lemmas.py wn/usr/share/wordnet wn30_synset.lemmas.tsv.gz
Output rows: `synset<TAB>lemma` in file order, lemmas in synset order (the first is the synset's
`first_lemma` in wn30_synset.nodes.tsv.gz). Synset ids are `offset-p` with p the file's part of
speech (adjective satellites are `-a`, as in the node table). Lemmas are written as WordNet writes
them (underscores for spaces), less the adjective position markers `(a)`, `(p)`, `(ip)`.
"""
import gzip
import re
import sys

MARKER = re.compile(r"\((a|p|ip)\)$")


def rows(directory):
    for pos, name in (("n", "noun"), ("v", "verb"), ("a", "adj"), ("r", "adv")):
        with open(f"{directory}/data.{name}", encoding="latin-1") as f:
            for line in f:
                if line.startswith("  "):
                    continue  # the licence header
                fields = line.split(" ")
                offset, count = fields[0], int(fields[3], 16)
                for i in range(count):
                    lemma = MARKER.sub("", fields[4 + 2 * i])
                    yield f"{offset}-{pos}", lemma


def main():
    directory, out = sys.argv[1], sys.argv[2]
    with gzip.GzipFile(out, "wb", mtime=0) as raw:
        raw.write(b"#synset\tlemma\n")
        for synset, lemma in rows(directory):
            raw.write(f"{synset}\t{lemma}\n".encode("utf-8"))


if __name__ == "__main__":
    main()
