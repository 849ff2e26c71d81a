DROP TABLE confirmation_caps;
