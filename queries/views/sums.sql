-- sum_of_every_rank(x): the sum of x over a group's ranks where every one of them has it, else NULL. Some
-- releases log a figure (the weights, the CUDA graphs' memory) on TP0 only: its sum over the ranks that did
-- would pass for the launch's.
CREATE OR REPLACE MACRO sum_of_every_rank(x) AS CASE WHEN count(x) = count(*) THEN sum(x) END;
