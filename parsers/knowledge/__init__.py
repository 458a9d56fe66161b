"""Knowledge about agent prose, as data: the tokenizer's token classes, units, entity patterns, and the
quantities a server log measures with the words agents use for them. `logmine.knowledge.nlp` and
`logmine.knowledge.claims` read these files; nothing here is code."""
