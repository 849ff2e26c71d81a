DROP TABLE submission_files;
DROP TABLE uploads;
