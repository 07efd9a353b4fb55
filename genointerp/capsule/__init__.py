"""DiseaseCapsule: the capsule-train and capsule-predict jobs and the gene read-outs of a trained network."""
