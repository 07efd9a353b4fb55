"""Which viral type a read called viral comes from: its placement on the model folder's references,
EM over the references, and the virus its seeds name where no reference places it."""
