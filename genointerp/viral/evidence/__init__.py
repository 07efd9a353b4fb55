"""Evidence that a read is viral, beside the model: indexes of a model folder's viral references'
seeds and proteins, how unlikely a read's matches to them are by chance, the indexes prebuilt
(which the index-model job of genointerp.viral.training stores)."""
