"""Rule sets: the data in rules/*.yaml made into matchers that emit spans.

schema.py     the rule file's pydantic models (one per rule kind) and `merged_policy`
loader.py     reads and validates one rule file (safe_load; errors name file:line:rule id)
catalog.py    `CATALOG`: the built-in sets parsed once, composed with the user's files (`resolve`), the
              detection keywords, and `register_kind` for rule kinds of one's own
matchers.py   one matcher per kind (regex, keywords, numbers, cue windows, ...); registry.py builds them
prefilter.py, context.py, guard.py, pos.py, validators.py   what the matchers share (anchors, the regex
              timeout, part-of-speech tags, checks such as ID-number checksums)
check.py      `catp rules test/lint`: a rule file's own examples

May import catp.errors, catp.tokens, catp.surrogates and catp.select.policy; nothing here imports the engine,
select's algorithms, scoring or the CLI.
"""
