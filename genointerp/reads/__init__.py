"""Reads: the simulate-reads and kmerize jobs."""
