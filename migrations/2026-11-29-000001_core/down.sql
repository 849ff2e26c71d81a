DROP TABLE deliveries;
DROP TABLE conflicts;
DROP TABLE effect_attempts;
DROP TABLE side_effects;
DROP TABLE submissions;
