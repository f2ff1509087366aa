"""What the stages of a cycle hand each other: the records (:mod:`.records`) and the small
interfaces the cycle's stages and their adapters meet at (:mod:`.ports`). The controller, local
mode and the report stage depend on these, never on each other."""
