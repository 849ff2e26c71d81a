DROP TABLE changes_start;
DROP TABLE changes;
