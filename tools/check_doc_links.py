#!/usr/bin/env python3
"""Checks the links of the built book (mdbook build docs): every relative
link and image points at a page that exists, and every #fragment at an
element of that page with that id. External links are not fetched (CI has
no network); they are listed with -v.

    python3 tools/check_doc_links.py docs/book [-v]
"""
import html.parser
import os
import sys
import urllib.parse


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids = set()
        self.links = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "a" and "name" in a:
            self.ids.add(a["name"])
        for key in ("href", "src"):
            if key in a and a[key] is not None and tag in ("a", "img"):
                self.links.append((self.getpos()[0], a[key]))


def parse(path):
    p = Page()
    with open(path, encoding="utf-8") as f:
        p.feed(f.read())
    return p


def main():
    root = sys.argv[1]
    verbose = "-v" in sys.argv
    pages = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            if name.endswith(".html"):
                path = os.path.normpath(os.path.join(dirpath, name))
                pages[path] = parse(path)
    bad, external = [], set()
    skip = {"print.html", "toc.html", "404.html"}
    for path, page in sorted(pages.items()):
        if os.path.basename(path) in skip:
            continue
        for line, link in page.links:
            url = urllib.parse.urlparse(link)
            if url.scheme in ("http", "https", "mailto"):
                external.add(link)
                continue
            if url.scheme or link.startswith("javascript:"):
                continue
            target = path
            if url.path:
                target = os.path.normpath(
                    os.path.join(os.path.dirname(path), urllib.parse.unquote(url.path))
                )
                if os.path.isdir(target):
                    target = os.path.join(target, "index.html")
            if not os.path.exists(target):
                bad.append(f"{path}:{line}: {link}: no such file")
                continue
            if url.fragment and target.endswith(".html"):
                ids = pages[target].ids if target in pages else parse(target).ids
                if url.fragment not in ids:
                    bad.append(f"{path}:{line}: {link}: no #{url.fragment} there")
    if verbose:
        for link in sorted(external):
            print(f"external (not checked): {link}")
    for b in bad:
        print(b)
    print(f"{len(pages)} pages, {len(bad)} broken links, {len(external)} external links not checked")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
